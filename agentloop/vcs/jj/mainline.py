"""The main line of a parallel jj run: the line of @ in the main checkout's workspace, onto which
each lane's finished change is rebased (`jj rebase -r <task> --insert-before @`), one landing at a
time. agentloop.vcs.jj.lane says how a lane's change gets here and what happens on a conflict or
while the user's own edits in @ touch a file it changes.

The common case takes one command: a change made right on the main line's tip, below an @ whose
own edits touch none of its files, lands by `jj rebase -s <@, when it is such an @> -d <change>`:
the revset asks both questions in the same command that snapshots the checkout and moves @, so
the user's @ moves onto the change, its files appear in the checkout, and the change itself and
the lane's @ on it are not rewritten, so nothing in the lane goes stale. When the revset names no
revision, jj rebases nothing and the landing goes the long way.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from agentloop.errors import VcsError
from agentloop.vcs.jj.leftovers import CONCURRENT
from agentloop.vcs.jj.run import SUMMARIES, Jj, fileset, summaries
from agentloop.vcs.landing import POLL_SECONDS, WAIT_LIMIT, IntegrationConflict, Waiting

# What `jj rebase` says when its revset named no revision: the short way did not apply.
NOTHING = "No revisions to rebase"


class JjMainLine:
    """The line of @ in the main checkout; landings take one lock in turn."""

    def __init__(self, root: Path, on_wait: Callable[[str], None] | None = None,
                 stopping: Callable[[], bool] | None = None,
                 wait_limit: float = WAIT_LIMIT) -> None:
        self.root = root
        self.jj = Jj(root)
        self.on_wait = on_wait or (lambda text: None)
        self.stopping = stopping or (lambda: False)
        self.wait_limit = wait_limit
        # Told (files, since, line) while a landing waits: the run records it for --status.
        self.on_waits: Callable[[list[str], float, str], None] | None = None
        self._lock = threading.Lock()
        # The user's snapshot.auto-track as the run's checkout read it, for the lanes' own.
        self.auto_track: str | None = None
        # The repository's operation when the run's first lane was made: abandons of yours
        # after it are looked for (agentloop.vcs.jj.takenback.revived).
        self.began: str | None = None
        # The forget operations reverted to bring a lane's workspace back (agentloop.vcs.jj.
        # revive): no lane's check reads those reverts as an undo.
        self.revived: set[str] = set()

    def tip(self) -> str:
        """The main line's newest change: @'s parent in the main checkout (read without a
        snapshot of the checkout, which only a landing takes, with the lanes' settings)."""
        return self.jj.out("--ignore-working-copy", "log", "--no-graph", "-r", "@-", "-T",
                           'change_id ++ "\n"').split()[0]

    def catch_up(self) -> bool:
        """The main checkout brought up to date (`jj workspace update-stale`) after a lane's
        command rewrote its @; a no-op when nothing did. Whether files there differed from
        jj's last record of them, which jj then keeps in a change of their own."""
        with self._lock:
            done = self.jj.run("workspace", "update-stale")
        return CONCURRENT in done.stdout + done.stderr

    def drop(self, changes: set[str]) -> None:
        """`changes` abandoned (every commit of each), from the main checkout, between
        landings: you abandoned them, and a concurrent operation of ours brought them back.
        That merge also left a copy of your working-copy change on the one brought back (our
        operation rebased your @ there, your abandon elsewhere): rebased off it now, a copy
        that changes what @ changes, with its description, and that no one's @ or change sits on,
        is dropped; one that differs stays for you (`jj log -r 'divergent()'`)."""
        with self._lock:
            self.jj.out("abandon", " | ".join(f"change_id({c})" for c in sorted(changes)))
            wc = self.jj.ids("@")[0]
            for copy in self.jj.ids(f"(change_id({wc}) & visible_heads()) ~ working_copies()",
                                    "commit_id"):
                same = self.jj.out("diff", "--git", "-r", copy) == \
                    self.jj.out("diff", "--git", "-r", "@") and \
                    self.jj.description(copy) == self.jj.description("@")
                if same:
                    self.jj.out("abandon", copy)

    def forget(self, commits: list[str]) -> None:
        """Nothing to forget: a jj change keeps its id wherever it lands."""

    def forget_all(self) -> None:
        """Nothing to forget (see forget)."""

    def land(self, change: str, lane_wc: str, made: tuple[str, str, frozenset[str]] | None = None
             ) -> str:
        """Put `change` under the main checkout's @; the lane's @ (`lane_wc`, a workspace's
        `name@`) onto it. `made`: (the parent it was just made on, its commit id, its files),
        for the short way. The change's new commit id; IntegrationConflict when it does not
        fit, LandingHeld when the user's edits keep it waiting longer than `wait_limit`."""
        if made is not None:
            with self._lock:
                if self._moved_onto(change, made[0], made[2]):
                    return made[1]
        waiting = Waiting(self.root, self.wait_limit, self.on_wait, self.on_waits)
        while True:
            with self._lock:
                with waiting.held_if_stopped(self.stopping):  # a stop in a look again
                    busy = sorted(self.jj.files(change) & self.jj.files("@"))
                if not busy:
                    return self._insert(change, lane_wc)
            with waiting.held_if_stopped(self.stopping):  # held, not lost
                waiting.still(change, busy, [], "commit them (`jj commit`) and it lands")
                if self.stopping():
                    raise VcsError(f"stopped before change {change[:12]} reached the main line")
                time.sleep(POLL_SECONDS)

    def _moved_onto(self, change: str, base: str, files: frozenset[str]) -> bool:
        """The short way: @ onto `change` when @ sits right on `base` (where the change was
        made) and its own edits touch none of `files`; whether it moved."""
        guard = f"@ & children({base}) & ~merges()"
        if files:
            guard += f" & ~files({fileset(sorted(files))})"
        done = self.jj.run(*SUMMARIES, "rebase", "-s", guard, "-d", change)
        wc = next((r for r in summaries(done.stderr) if r.is_wc), None)
        if wc is None and NOTHING in done.stderr:
            return False
        if wc is None:  # nothing rebased, or a report we cannot read: where @ is, asked
            wc = next(iter(self.jj.revs("@", "--ignore-working-copy")), None)
        return wc is not None and wc.parents == (change,)

    def _insert(self, change: str, lane_wc: str) -> str:
        before = self.jj.ids(f"{change}-")
        onto = self.tip()
        self.jj.out("rebase", "-r", change, "--insert-before", "@")
        if self.jj.ids(f"conflicts() & {change}"):
            files = tuple(sorted(self.jj.files(change)))
            # Put it back: the main line (and the user's checkout) as it was.
            self.jj.out("rebase", "-r", change, "-d", before[0])
            self.jj.out("rebase", "-s", lane_wc, "-d", change)
            raise IntegrationConflict(change, files, onto)
        self.jj.out("rebase", "-s", lane_wc, "-d", change)
        return self.jj.ids(change, "commit_id")[0]
