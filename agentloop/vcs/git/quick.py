"""The git backend's short way to commit a task: `git add -A` and `git commit`, the two commands a
person's own loop runs, when the careful way (`git status`, then `commit --only` of the paths it
names) would commit the very same thing.

That holds when the task began on a clean tree (nothing staged, nothing dirty but what agent-loop
keeps out of commits) and nothing has touched the index since: not the agent's own `git add` or
`git commit`, not even a `git status`, which rewrites it. Then every path `git add -A` reports is
the task's, and the commit of the whole index holds nothing else. Where `git add -A` takes what a
task commit never holds (a nested repository), the index is put back and the careful way runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.files.stamp import stamp
from agentloop.vcs import STATE_DIR
from agentloop.vcs.git.files import plain
from agentloop.vcs.git.record import Start
from agentloop.vcs.git.repo import COMMIT_ARGS, GitRepo

# How long after a task's commit the next task may begin without looking at the tree again.
CARRY_SECONDS = 0.5
# How git's own `add --verbose` names what it staged (LC_ALL=C: never translated).
ADDED, REMOVED = "add '", "remove '"
# How `git add` opens its list of pathspecs that name ignored paths (LC_ALL=C).
IGNORED = "The following paths are ignored by one of your .gitignore files:"


def index_seen(git_dir: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """Who the index file is now: git replaces it whole on every write (a new inode)."""
    if "GIT_INDEX_FILE" in os.environ:
        return None  # an index elsewhere: we would be watching the wrong file
    return stamp(Path(git_dir) / "index")


def staged_paths(out: str, root: Path) -> set[str] | None:
    """The paths `git add -A --verbose` staged; None when its report is not one we can trust
    whole (a nested repository, a name with a newline in it, a path git should never give)."""
    paths = set()
    for line in out.splitlines():
        if not line.endswith("'"):
            return None
        if line.startswith(ADDED):
            rel, added = line[len(ADDED):-1], True
        elif line.startswith(REMOVED):
            rel, added = line[len(REMOVED):-1], False
        else:
            return None
        # A name cut in two by a newline would name a file that is not there (or is).
        if not plain(rel) or rel.endswith("/") or os.path.lexists(root / rel) != added:
            return None
        if added and (root / rel).is_dir() and not (root / rel).is_symlink():
            return None  # a nested repository, taken as a gitlink
        paths.add(rel)
    return paths


def sparse(git_dir: Path) -> bool:
    """Whether the checkout may be a sparse one: `git add -A` there leaves a tracked file
    outside the patterns (the agent's edit of one it wrote) out without a word, where the
    careful way's `git status` sees it. Patterns a `sparse-checkout disable` left count too."""
    return (git_dir / "info" / "sparse-checkout").exists()


def only_kept_ignored(stderr: str, kept: list[str]) -> bool:
    """Whether `git add`'s complaint is only that some of the paths it was told to leave out are
    ignored anyway (`.agent-loop/` in .gitignore, as many repositories have it): git staged
    everything else and exits 1 all the same."""
    lines = [line for line in stderr.splitlines() if not line.startswith("hint: ")]
    return bool(lines) and lines[0] == IGNORED and len(lines) > 1 and \
        set(lines[1:]) <= set(kept)


def stage_all(repo: GitRepo, start: Start, meanwhile: Callable[[], None] | None = None
              ) -> set[str] | None:
    """`git add -A` of everything but what agent-loop keeps out; the paths it staged, or None
    when the short way may not be taken (the index is HEAD's tree again then). `meanwhile`:
    called once the `add` has started (proc.run's)."""
    kept = sorted({STATE_DIR, *repo.plans, *(p for p in (repo.task_rel, start.task) if p)})
    out: str | None = None
    try:
        done = repo.git.run("add", "--all", "--verbose", "--", ".",
                            *(f":(exclude,literal){p}" for p in kept), codes=(0, 1),
                            env={"LC_ALL": "C", "GIT_LITERAL_PATHSPECS": "0"},
                            meanwhile=meanwhile)
        if done.returncode == 0 or only_kept_ignored(done.stderr, kept):
            out = done.stdout
    except VcsError:  # say, a nested repository with no commit yet: it may have staged some
        pass
    paths = None if out is None else staged_paths(out, repo.root)
    if paths is None:
        repo.git.out("reset", "-q")  # the index was HEAD's tree: it is again
    return paths


def commit_index(repo: GitRepo, message: str) -> bool:
    """`git commit` of the whole index; False (the index put back) when git declines."""
    try:
        repo.git.out(*COMMIT_ARGS, "-m", message)
    except VcsError:
        repo.git.out("reset", "-q")
        return False
    return True


class NextBegin:
    """After a clean commit (only the task's paths were staged, the agent made no commits of
    its own) the next task's begin is known already: HEAD is the commit, the index its tree,
    and the paths the task left alone hold what they held at this begin."""

    def __init__(self) -> None:
        self._next: tuple[int, float, Start] | None = None

    def foresee(self, repo: GitRepo, start: Start, sha: str, staged: frozenset[str]) -> bool:
        """Note the next begin after commit `sha` of `start`; True when nothing else is dirty
        (the index file can be watched from here)."""
        if start.touched or not staged <= set(start.files):
            return False
        states = {p: state for p, state in start.states.items() if p not in start.files}
        self._next = (proc.started(), time.monotonic(),
                      Start(sha, start.ref, repo.tree(sha), states, start.task))
        return not states

    def expect(self, start: Start) -> None:
        """Note the next begin as `start`, known without asking git (a working copy made
        afresh a moment ago: its commit, that commit's tree in the index, nothing else)."""
        self._next = (proc.started(), time.monotonic(), start)

    def carry(self, since: int) -> None:
        """The processes started since `since` were agent-loop's own git commands in another
        working copy (a lane's landing in the user's checkout): the begin foreseen holds."""
        if self._next is not None and self._next[0] == since:
            self._next = (proc.started(), *self._next[1:])

    def take(self, repo: GitRepo) -> Start | None:
        """The begin foreseen, if nothing but agent-loop's own code ran since, and only for a
        moment: every agent, check and helper is a process, and a git command may have moved
        anything; a pause between tasks (--sleep) leaves the user time to edit. (Their edits
        in those few milliseconds count as the task's, as edits made while its agent works
        do.)"""
        carried, self._next = self._next, None
        if carried is None or carried[0] != proc.started() or \
                time.monotonic() - carried[1] > CARRY_SECONDS:
            return None
        start = carried[2]
        return start if repo.where() == (start.ref, start.head) else None
