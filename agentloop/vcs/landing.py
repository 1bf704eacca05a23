"""What the git and jj main lines share: a lane's change that does not fit, the conflict markers
left in a file, and how often a landing that waits looks again."""

from __future__ import annotations

import contextlib
import time
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Iterator

from agentloop.errors import Interrupted, VcsError
from agentloop.files.names import said_all

POLL_SECONDS = 1.0
# How long a landing waits on the user's uncommitted edits before its group is held (the
# `lane-wait` setting), and how often the wait is said again meanwhile.
WAIT_LIMIT = 600.0
SAY_AGAIN = 180.0


class IntegrationConflict(VcsError):
    """A lane's commit does not merge cleanly with the main line."""

    def __init__(self, commit: str, files: tuple[str, ...], onto: str) -> None:
        super().__init__(f"commit {commit[:12]} conflicts with the main line in "
                         f"{', '.join(files) or 'some files'}")
        self.commit = commit
        self.files = files
        self.onto = onto
        # What the lane's check found the agent did to your checkout, said already as the
        # landing failed: kept in the task's record once the conflict is resolved.
        self.note: str | None = None


class LandingHeld(VcsError):
    """A finished task waited longer than the lane-wait setting for files in the user's
    checkout: its group is held, its work kept on its lane."""

    def __init__(self, commit: str, files: list[str], since: float, message: str,
                 stop: BaseException | None = None) -> None:
        super().__init__(message)
        self.commit = commit
        self.files = tuple(files)
        self.since = since
        # The run was stopped (Ctrl+C) while the landing waited: once the task is held, with
        # its commit, the stop goes on.
        self.stop = stop


class Waiting:
    """A landing waiting on files in the user's checkout: said when it starts, again at most
    every SAY_AGAIN seconds, and given up after `limit` seconds (LandingHeld)."""

    def __init__(self, root: Path, limit: float, say: Callable[[str], None],
                 waits: Callable[[list[str], float, str], None] | None = None) -> None:
        self.root = root
        self.limit = limit
        self.say = say
        self.waits = waits  # told (files, since, line) each time the wait is said
        self.since = time.time()
        self.started = time.monotonic()
        self.said = -SAY_AGAIN
        self.commit = ""
        self.busy: list[str] = []  # what the last look found in the way; none before the first
        self.blocker: str | None = None  # or what kept it out whatever it changed (blocked)

    def still(self, commit: str, busy: list[str], during: list[str], how: str) -> None:
        """One more look found `busy` in the way (`during`: written after the run began)."""
        self.commit, self.busy, self.blocker = commit, busy, None
        names = said_all(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
        if during:
            what = (f"{said_all(during[:5])} in {self.root}, changed during this run after it "
                    "began (an agent writing outside its lane, or you meanwhile),")
            if len(during) < len(busy):
                yours = said_all([p for p in busy if p not in during])
                what += f" and your uncommitted edits to {yours}"
        else:
            what = f"your uncommitted edits to {names} in {self.root}"
        self._look(commit, busy, f"{what} overlap task commit {commit[:12]}'s change",
                   f"{what} overlap a finished task's change", how)

    def blocked(self, commit: str, what: str, how: str) -> None:
        """One more look found your checkout unable to take a landing now (`what`: a merge of
        yours stopped on a conflict, say), whichever files the task changed."""
        self.commit, self.busy, self.blocker = commit, [], what
        self._look(commit, [], f"{what} keeps task commit {commit[:12]} from your branch",
                   f"{what} keeps a finished task from your branch", how)

    def _look(self, commit: str, files: list[str], held: str, waiting: str, how: str) -> None:
        """Held past the limit (LandingHeld, `held` said), else the wait said at most every
        SAY_AGAIN seconds (`waiting`)."""
        now = time.monotonic()
        clock = datetime.fromtimestamp(self.since).strftime("%H:%M:%S")
        if now - self.started >= self.limit:
            raise LandingHeld(commit, files, self.since,
                              f"held: {held} since {clock}; its work stays on its lane; {how}, "
                              "then run agent-loop again")
        if now - self.said >= SAY_AGAIN:
            self.said = now
            line = f"waiting since {clock}: {waiting}; {how}"
            self.say(line)
            if self.waits is not None:
                self.waits(files, self.since, line)


    @contextlib.contextmanager
    def held_if_stopped(self, stopping: Callable[[], bool]) -> Iterator[None]:
        """A stop (Ctrl+C, a signal, the run's own stop: `stopping`) anywhere in a landing that
        has waited already, in a sleep or in one of its looks again, holds the commit, so the
        next run lands it without paying its agent again; before the first wait the stop goes
        on as it is. Anything else (held, a conflict, git failing while nobody stops the run)
        passes unchanged."""
        try:
            yield
        except (LandingHeld, IntegrationConflict):
            raise
        except BaseException as stop:
            if not (self.busy or self.blocker) or not (
                    isinstance(stop, (KeyboardInterrupt, Interrupted)) or stopping()):
                raise
            clock = datetime.fromtimestamp(self.since).strftime("%H:%M:%S")
            on, then = ((self.blocker, "finish it") if self.blocker else
                        (f"your uncommitted edits to {said_all(self.busy[:5])}",
                         "commit, stash or move them"))
            raise LandingHeld(
                self.commit, self.busy, self.since,
                f"held: stopped while task commit {self.commit[:12]} waited since {clock} on "
                f"{on}; its work stays on its lane; {then}, then run agent-loop again",
                stop) from None


MARKERS = ("<<<<<<< ", ">>>>>>> ")  # git's and jj's alike, at the start of a line


def markers_left(root: Path, files: Iterable[str]) -> list[str]:
    """Which of `files` (relative to `root`) still hold a conflict marker at a line's start."""
    left = []
    for name in files:
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(line.startswith(MARKERS) for line in text.splitlines()):
            left.append(name)
    return left
