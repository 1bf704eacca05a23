"""git in a lane of a parallel run: the group's tasks are committed in its own worktree, as a
sequential run commits them, and each one lands on the main line as it finishes
(agentloop.vcs.mainline): the task's change as the run records it is the main line's commit."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterable

from agentloop import proc
from agentloop.vcs import Change
from agentloop.vcs.git import GitVcs
from agentloop.vcs.mainline import (
    GitMainLine,
    IntegrationConflict,
    changed_files,
    copy_commit,
    markers_left,
)


class LaneGit(GitVcs):
    """One group's worktree; finished tasks land on `main`."""

    def __init__(self, worktree: Path, task_file: Path, main: GitMainLine) -> None:
        # A lane left by a killed run may hold files of an attempt that never finished; the
        # open-attempt record rolls them back, and anything else is no task's.
        super().__init__(worktree, task_file, allow_dirty=True)
        self.main = main
        self.lane_commits: list[str] = []   # what landed, for the lane's records to be dropped

    def finish(self, change: Change, message: str) -> Change:
        """Commit in the lane, then land that commit on the main line."""
        return self._landed(super().finish(change, message))

    def recovered(self) -> Change | None:
        """A commit an earlier run made in this lane and may not have landed: landed now."""
        found = super().recovered()
        return None if found is None else self._landed(found)

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Finished tasks' commits no longer on the main line."""
        ids = list(change_ids)
        if not ids:
            return set()
        done = proc.run(["git", "rev-list", self.main.ref], cwd=self.main.root, check=False,
                        timeout=60)
        if done.returncode != 0:
            return set()
        seen = set(done.stdout.split())
        return {c for c in ids if c not in seen}

    def _landed(self, done: Change) -> Change:
        if done.empty or not done.change_id:
            return done
        sha = self.main.land(done.change_id)
        self.lane_commits.append(done.change_id)
        return dataclasses.replace(done, change_id=sha, commit_id=sha)

    # -- conflicts: the lane's worktree is where a person or the group's agent resolves one ------

    def open_conflict(self, conflict: IntegrationConflict) -> list[str]:
        """The worktree as the main line is now, with the lane commit's change applied on top and
        git's conflict markers where it does not fit; the conflicted files."""
        self._git("reset", "-q", "--hard", conflict.onto)
        self._git("cherry-pick", "--no-commit", conflict.commit, codes=(0, 1))
        out = self._git("diff", "--name-only", "-z", "--diff-filter=U")
        return [f for f in out.split("\0") if f] or list(conflict.files)

    def markers_left(self, files: Iterable[str]) -> list[str]:
        """Which of `files` still hold a conflict marker at the start of a line."""
        return markers_left(self.root, files)

    def close_conflict(self, conflict: IntegrationConflict) -> Change:
        """The resolution committed on the main line's commit (the task commit's author, date and
        message), the lane moved to it, and landed; IntegrationConflict if the main line moved
        on meanwhile in a way that conflicts again."""
        self._git("add", "-A")
        tree = self._git("write-tree").strip()
        new = copy_commit(self.root, conflict.commit, tree, conflict.onto)
        self._git("cherry-pick", "--quit", codes=(0, 128))
        self._git("reset", "-q", "--hard", new)
        done = Change(change_id=new, commit_id=new,
                      files=tuple(changed_files(self.root, conflict.onto, new)))
        return self._landed(done)

    def drop_conflict(self, conflict: IntegrationConflict) -> None:
        """Unresolved: the worktree back on the lane's own commit, which its branch keeps."""
        self._git("cherry-pick", "--quit", codes=(0, 128))
        self._git("reset", "-q", "--hard", conflict.commit)

    def head(self) -> str:
        """The lane's commit now (after a person resolved a conflict in it, their commit)."""
        return self._git("rev-parse", "HEAD").strip()

    def land_again(self, commit: str) -> Change:
        """A conflicted task's commit (or a person's resolution of it) tried on the main line
        once more; IntegrationConflict when it still does not fit."""
        return self._landed(Change(change_id=commit, commit_id=commit))

    def lane_branch(self) -> str:
        """The branch this lane's worktree is on."""
        return self._git("rev-parse", "--abbrev-ref", "HEAD").strip()

    def main_commits_touching(self, commit: str, onto: str, files: list[str]) -> list[str]:
        """The main line's commits since `commit` branched off that changed `files`."""
        base = self._git("merge-base", commit, onto).strip()
        return self._git("log", "--format=%H", f"{base}..{onto}", "--", *files).split()

    def kept(self, change_id: str) -> str:
        """What a conflicted task lands as on a later run: the lane's commit now (a person's
        resolution of it, made in the worktree, included)."""
        return self.head()

    def help_lines(self, where: str) -> str:
        """How a person looks at a conflicted task's commit and goes on."""
        branch, main = self.lane_branch(), self.main.ref.removeprefix("refs/heads/")
        return (f"its work is on branch {branch} (worktree {where}): `git log -p "
                f"{main}..{branch}` shows it; resolve it there (`cd {where} && git rebase "
                f"{main}`, fix, `git rebase --continue`), then run agent-loop again with "
                "--parallel to land it and go on")
