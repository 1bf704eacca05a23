"""Which backend a run gets: the one place that turns `--vcs` into a VCS implementation."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs import KINDS, Vcs, find_root
from agentloop.vcs.stays_git import git_only


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
    if kind == "auto" and repo is not None and git_only(repo):
        # A git user's repository stays one (agentloop.vcs.stays_git says why).
        from agentloop.vcs.git import GitVcs
        return GitVcs(root, task_file, allow_dirty)
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
