"""Version control behind one protocol: the runner begins, finishes and abandons changes without
knowing whether jj, git or nothing is underneath.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Change:
    """One task attempt's change. jj: change and commit id; git: the start commit, then the sha."""

    change_id: str          # jj change id; git: the task commit's sha once finished ("" before)
    commit_id: str = ""     # jj commit id; git: same as change_id once finished
    base: str = ""          # what the change started from (git: HEAD sha at begin; jj: parent)
    empty: bool = False     # set by finish: the task changed no files
    files: tuple[str, ...] = ()  # set by finish: the paths the task changed

    @property
    def short(self) -> str:
        """The id as a user types it."""
        return self.change_id[:12]


class Vcs(Protocol):
    """What the runner needs from a version control system."""

    name: str

    def prepare(self) -> list[str]:
        """Make the repository ready (init when missing); return notes to show the user."""

    def begin(self, message: str) -> Change:
        """Start a task's change described by `message`."""

    def finish(self, change: Change, message: str) -> Change:
        """Seal the task's change; return it with final ids, `empty` and `files` filled in."""

    def abandon(self, change: Change) -> None:
        """Drop the change and every edit the attempt made, leaving all else as it was."""

    def diff(self, change: Change) -> str:
        """The change's diff as text."""

    def close(self) -> None:
        """Leave the repository so the user's next edits fall into no task's change."""

    def recovered(self) -> Change | None:
        """A change an earlier run finished but was killed before recording, if prepare found
        one (git); the runner then records it instead of running its task again."""


# The tool's own folder beside the task file: never part of any task's change.
STATE_DIR = ".agent-loop"
KINDS = ("auto", "jj", "git", "none")


def find_root(start: Path) -> Path | None:
    """The nearest folder from `start` upwards holding `.jj` or `.git`; no process is started."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".jj").is_dir() or (folder / ".git").exists():
            return folder
    return None


def relative_to(path: Path, root: Path) -> str | None:
    """`path` as a slash-separated path inside `root`, or None when it lies outside."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def open_vcs(kind: str, root: Path, task_file: Path, allow_dirty: bool = False) -> Vcs:
    """The backend for `kind` (auto, jj, git or none); nothing is changed until prepare()."""
    # Imported here: `--status` imports this package for find_root and must stay fast.
    from agentloop.errors import ProgramNotFound, VcsError

    if kind == "none":
        from agentloop.vcs.none import NoneVcs
        return NoneVcs()
    if kind == "git":
        from agentloop.vcs.git import GitVcs
        return GitVcs(root, task_file, allow_dirty)
    if kind not in ("jj", "auto"):
        raise VcsError(f"unknown version control {kind!r}: choose one of {', '.join(KINDS)}")
    repo = find_root(root)
    if repo is not None and (repo / ".git").is_file() and not (repo / ".jj").is_dir():
        # A git worktree (or submodule): its .git is a file, and jj cannot colocate there.
        if kind == "jj":
            raise VcsError(f"{repo} is a git worktree, where jj cannot colocate: run in the "
                           "main repository, or use --vcs git")
        from agentloop.vcs.git import GitVcs
        return GitVcs(root, task_file, allow_dirty,
                      note=f"{repo} is a git worktree, where jj cannot colocate: using git")
    from agentloop.vcs.jj import JjVcs, jj_root
    try:
        found = jj_root(root)
    except ProgramNotFound:
        if kind == "jj":
            raise VcsError("jj is not installed or not on PATH") from None
        if repo is not None and (repo / ".jj").is_dir() and not (repo / ".git").exists():
            raise VcsError(f"{repo} is a jj repository, but jj is not installed or not on PATH")
        from agentloop.vcs.git import GitVcs
        return GitVcs(root, task_file, allow_dirty)
    # With jj the user's uncommitted work stays in its own change, so allow_dirty is moot.
    return JjVcs(found or root, task_file, initialized=found is not None)
