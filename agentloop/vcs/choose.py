"""Which backend a run gets: the one place that turns `--vcs` into a VCS implementation."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from agentloop.vcs import KINDS, Vcs, find_root

# What a lane's landing raises when its change does not fit the main line; named here so that the
# run core catches it without importing a backend (the module is small: no git library).
from agentloop.vcs.mainline import IntegrationConflict as IntegrationConflict


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
            raise VcsError(f"{repo} is a jj repository, but jj is not installed or not on "
                           "PATH") from None
        from agentloop.vcs.git import GitVcs
        return GitVcs(root, task_file, allow_dirty)
    # With jj the user's uncommitted work stays in its own change, so allow_dirty is moot.
    return JjVcs(found or root, task_file, initialized=found is not None)


# A run's main line (the branch every lane's tasks land on) and a lane's backend, opened by kind
# here so that the run core (agentloop.run) and the fleet never import a backend's module.
MainLine = Any   # GitMainLine | JjMainLine: tip(), land(...), forget(...), forget_all()


def open_main_line(kind: str, root: Path, on_wait: Callable[[str], None] | None = None,
                   stopping: Callable[[], bool] | None = None, ref: str | None = None,
                   ) -> MainLine:
    """The main line of a `kind` (git or jj) repository: for git the branch the main checkout
    is on (or `ref`), for jj the line of @."""
    if kind == "git":
        from agentloop.vcs.mainline import GitMainLine
        if ref is not None:
            return GitMainLine(root, ref, on_wait=on_wait, stopping=stopping)
        line = GitMainLine(root, "", on_wait=on_wait, stopping=stopping)
        line.ref = GitMainLine.current(root).ref
        return line
    from agentloop.vcs.jjlane import JjMainLine
    return JjMainLine(root, on_wait=on_wait, stopping=stopping)


def open_lane(kind: str, main: MainLine, workspace: Path, task_file: Path, branch: str = ""
              ) -> Vcs:
    """The backend of one lane's working copy (a git worktree or a jj workspace), whose
    finished tasks land on `main`."""
    if kind == "git":
        from agentloop.vcs.gitlane import LaneGit
        return LaneGit(workspace, task_file, main)
    from agentloop.vcs.jjlane import LaneJj
    return LaneJj(workspace, task_file, main, branch)
