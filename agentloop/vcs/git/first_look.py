"""A git run's first look at your checkout, started with the run's other early questions to git
(agentloop.vcs.preflight.ask_git) rather than when the backend opens the repository: where the
repository is (GitRepo.locate's `git rev-parse`) and what is uncommitted (its first `git
status`), two commands that only read. They ran one after the other, each waited for, between
the plan's parse and the lane's `worktree add`; now they run while the run's modules load and
the plan is parsed, and the backend takes their answers (agentloop.vcs.git.repo).

An answer is taken once, by the backend of the same folder. The status stands for the first
look only when nothing agent-loop does before it can have changed the checkout: none when a
killed run's attempt record is there (its files may be rolled back first), and preflight drops
it when it finishes a landing a kill cut short (forget_status)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.status import ARGS as STATUS_ARGS
from agentloop.vcs.githooks import HOOK_PATHS

# What GitRepo.locate asks: the repository's kind and folders, and its hooks' paths with them.
WHERE = ("rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir",
         "--show-toplevel", *HOOK_PATHS)
WHERE_ENV = {"LC_ALL": "C"}


class _Once:
    """A started command's answer, waited for once (the first call reaps it); None when it
    could not give one (the taker asks again, and says what went wrong)."""

    def __init__(self, wait: Callable[[], proc.Completed]) -> None:
        self._wait: Callable[[], proc.Completed] | None = wait
        self._done: proc.Completed | None = None
        self._lock = threading.Lock()

    def __call__(self) -> proc.Completed | None:
        with self._lock:
            wait, self._wait = self._wait, None
            if wait is not None:
                try:
                    self._done = wait()
                except VcsError:
                    self._done = None
            return self._done


class _Look:
    def __init__(self, where: _Once, status: _Once | None) -> None:
        self.where: _Once | None = where
        self.status = status
        self.both = (where, status)


_looks: dict[str, _Look] = {}
_lock = threading.Lock()


def look(root: Path) -> Callable[[], None]:
    """Start the first look at the checkout `root`; the function that waits for both commands
    (it must be called on every path: it reaps them; the backend's taking them does too)."""
    git = Git(root)
    try:
        where = _Once(git.begin(*WHERE, env=WHERE_ENV, codes=None,
                                    as_configured=True))
    except VcsError:  # git cannot start: the backend asks, and says so, as without a look
        return lambda: None
    try:
        status: _Once | None = _Once(git.begin(*STATUS_ARGS))
    except VcsError:
        status = None
    found = _Look(where, status)
    with _lock:
        _looks[str(root)] = found

    def settled() -> None:
        forget(root, found)
        for answer in found.both:
            if answer is not None:
                answer()
    return settled


def where(root: Path) -> proc.Completed | None:
    """GitRepo.locate's `git rev-parse` for `root`, when it was started for it and not taken
    yet (None: ask now)."""
    with _lock:
        found = _looks.get(str(root))
        answer = found.where if found is not None else None
        if found is not None:
            found.where = None
    return answer() if answer is not None else None


def status(root: Path, git_dir: Path) -> Callable[[], str | None] | None:
    """The first `git status` of `root` (GitRepo.status's), taken once with its rev-parse by
    locate (`git_dir`: the repository's, where a killed attempt leaves its record): the
    function that waits for its output (None then: ask now); None when there is no status to
    take or it may no longer be what the checkout holds."""
    from agentloop.vcs.git.record import OPEN_ATTEMPT

    with _lock:
        found = _looks.pop(str(root), None)
    if found is None or found.status is None:
        return None
    answer = found.status
    if (git_dir / OPEN_ATTEMPT).exists():  # recover may put files back before the first look
        answer()
        return None

    def output() -> str | None:
        done = answer()
        return done.stdout if done is not None else None
    return output


def peek_status(root: Path) -> str | None:
    """The first `git status` of `root`, waited for and left for the backend to take (its
    answer is kept); None when there is none, or it failed."""
    with _lock:
        found = _looks.get(str(root))
        answer = found.status if found is not None else None
    done = answer() if answer is not None else None
    return done.stdout if done is not None and done.returncode == 0 else None


def forget_status(root: Path) -> None:
    """The checkout `root` changed after its first look was started (preflight finished a
    landing): its status is asked again when needed."""
    with _lock:
        found = _looks.get(str(root))
        if found is not None:
            found.status = None


def forget(root: Path, found: _Look | None = None) -> None:
    with _lock:
        if found is None or _looks.get(str(root)) is found:
            _looks.pop(str(root), None)
