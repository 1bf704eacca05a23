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

import dataclasses
import os
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs import STATE_DIR, Change
from agentloop.vcs.gitfiles import plain
from agentloop.vcs.gitplumb import COMMIT_ARGS, _Start, index_seen
from agentloop.vcs.gitrecord import GitRecord

# How git's own `add --verbose` names what it staged (LC_ALL=C: never translated).
ADDED, REMOVED = "add '", "remove '"


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


class GitQuick(GitRecord):
    """The short way, and what tells whether it may be taken."""

    def _quick_finish(self, start: _Start, message: str) -> Change | None:
        """Commit the task the short way; None when it may not be taken (nothing done then)."""
        seen, self._index_seen = self._index_seen, None
        if start.states or seen is None or seen != index_seen(self.repo.git_dir) or \
                self._where() != (start.ref, start.head):
            return None
        kept = sorted({STATE_DIR, *self._plans, *(p for p in (self._task_rel, start.task) if p)})
        try:
            out = self._git("add", "--all", "--verbose", "--", ".",
                            *(f":(exclude,literal){p}" for p in kept),
                            env={"LC_ALL": "C", "GIT_LITERAL_PATHSPECS": "0"})
        except VcsError:  # say, a nested repository with no commit yet: it may have staged some
            out = None
        paths = None if out is None else staged_paths(out, self.root)
        if paths is None:
            self._git("reset", "-q")  # the index was HEAD's tree: it is again
            return None
        if not paths:
            self._forget()
            return Change(change_id="", base=start.head or "", empty=True)
        # Recorded before HEAD moves (begin did, unless the message changed since): a run
        # killed in between finds the commit by its message.
        if message != start.message:
            start = dataclasses.replace(start, message=message)
            self._remember(start)
        try:
            self._git(*COMMIT_ARGS, "-m", message)
        except VcsError:
            self._git("reset", "-q")
            return None
        sha = self._head()
        assert sha is not None
        self._carry(start, sha, frozenset())  # the index is the commit's tree: nothing staged
        return self._committed(start, sha, paths)
