"""Where a history stands, read off git's files (agentloop.vcs.history.where): a lane's linked
worktree follows its own HEAD, task after task, and a worktree made again at the same place."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs import history
from tests.support.repos import git, init_repo


def test_a_linked_worktree_follows_its_head_and_a_new_git_file(work: Path,
                                                                 tmp_path: Path) -> None:
    init_repo(work, "git")
    lane, other = tmp_path / "lane", tmp_path / "other"
    git(work, "worktree", "add", "-q", "-b", "lane", str(lane))
    git(work, "worktree", "add", "-q", "-b", "other", str(other))
    head = git(lane, "rev-parse", "HEAD").strip()
    assert history.where("git", lane) == head
    (lane / "a.txt").write_text("a\n")
    git(lane, "add", "a.txt")
    git(lane, "commit", "-qm", "a")
    moved = git(lane, "rev-parse", "HEAD").strip()
    assert moved != head and history.where("git", lane) == moved  # its dirs kept, HEAD read
    (other / "b.txt").write_text("b\n")
    git(other, "add", "b.txt")
    git(other, "commit", "-qm", "b")
    # The lane's `.git` file now names the other worktree's git dir (a worktree made again at
    # the same place names a new one): where follows the file, not what it read before.
    (lane / ".git").unlink()
    (lane / ".git").write_text((other / ".git").read_text())
    assert history.where("git", lane) == git(other, "rev-parse", "HEAD").strip()
    assert history.where("git", tmp_path / "nowhere") is None
    assert history.where("git", work) == git(work, "rev-parse", "HEAD").strip()
