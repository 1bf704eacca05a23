"""A working copy apart from the user's, for a run that must not touch their branch or files (a
rehearsal): the repository's kind decides git worktree or jj workspace (agentloop.vcs.lanes),
and the start is what the user has now, even in a repository with no commit yet.
"""

from __future__ import annotations

from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.git import teardown, worktrees
from agentloop.vcs.git.run import Git
from agentloop.vcs.jj import workspaces
from agentloop.vcs.lanes import Workspace

EMPTY_START = "agent-loop: an empty start (the repository had no commit yet)"


def kind_of(root: Path, asked: str) -> str:
    """`jj` or `git`: the kind of the repository at `root` a lane can be made in, as `--vcs`
    allows; VcsError says what is missing."""
    jj, git = (root / ".jj").is_dir(), (root / ".git").exists()
    if jj and asked in ("auto", "jj"):
        return "jj"
    if git and asked in ("auto", "git"):
        return "git"
    if asked in ("jj", "git") and (jj or git):
        raise VcsError(f"{root} is no {asked} repository: drop --vcs {asked}")
    raise VcsError(f"{root} is not a git or jj repository, which a rehearsal needs: it works "
                   "in a copy of its own, apart from your files, and makes nothing in yours. "
                   "`git init` (or `jj git init`) there makes one, as a real run would")


def open_lane(root: Path, name: str, kind: str, older: str = "") -> Workspace:
    """Lane `name` started afresh from what the user has now: git's HEAD (or an empty commit
    when there is none yet), jj's working-copy change. `older`: the name an older version gave
    it (git), taken up first: its worktree and branch become this lane's."""
    if kind == "jj":
        return workspaces.open_jj(root, name, "@", fresh=True)
    if older:
        worktrees.take_up(root, older, name)
    return worktrees.open_git(root, name, _git_start(root), fresh=True)


def remove_lane(root: Path, lane: Workspace, kind: str) -> None:
    """The lane's working copy goes; its branch (git) stays."""
    if kind == "jj":
        workspaces.remove_jj(root, lane)
    else:
        teardown.remove_git(root, lane)


def _git_start(root: Path) -> str:
    git = Git(root)
    head = git.sha("HEAD")
    if head:
        return head
    # No commit yet (a repository just made with `git init`): the lane starts from an empty
    # commit of its own, which no branch of the user's points at.
    tree = git.out("hash-object", "-t", "tree", "-w", "/dev/null").strip()
    return git.out("commit-tree", tree, "-m", EMPTY_START).strip()
