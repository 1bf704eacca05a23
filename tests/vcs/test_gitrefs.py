"""HEAD read from the git dir agrees with git itself: loose and packed branches, a detached
HEAD, an unborn branch, a linked worktree."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.git import refs, registration
from agentloop.vcs.git.refs import (
    any_under,
    branch_tip,
    healthy_worktree,
    no_linked_worktrees,
    tree_of,
    where,
)


def git(repo: Path, *args: str) -> str:
    return proc.run(["git", *args], cwd=repo).stdout.strip()


def told(repo: Path) -> tuple[str | None, str | None] | None:
    git_dir = Path(repo, git(repo, "rev-parse", "--git-dir"))
    common = Path(repo, git(repo, "rev-parse", "--git-common-dir"))
    return where(git_dir, common)


def test_head_as_git_tells_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    assert told(repo) == ("refs/heads/main", None)  # unborn
    (repo / "a").write_text("a\n")
    git(repo, "add", "a")
    git(repo, "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    assert told(repo) == ("refs/heads/main", first)
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert told(repo) == ("refs/heads/main", first)
    git(repo, "checkout", "-q", "--detach")
    assert told(repo) == (None, first)
    git(repo, "switch", "-q", "-c", "feature/x")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    assert told(repo) == ("refs/heads/feature/x", git(repo, "rev-parse", "HEAD"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "main")
    assert told(tmp_path / "other") == ("refs/heads/main", first)
    (repo / ".git" / "HEAD").write_text("ref: refs/remotes/origin/main\n")
    assert told(repo) is None  # left to GitPython


def test_a_loose_commits_tree_as_git_tells_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a").write_text("a\n")
    git(repo, "add", "a")
    git(repo, "commit", "-qm", "one")
    commit = git(repo, "rev-parse", "HEAD")
    common = repo / ".git"
    assert tree_of(common, commit) == git(repo, "rev-parse", "HEAD^{tree}")
    blob = git(repo, "rev-parse", "HEAD:a")
    assert tree_of(common, blob) is None  # not a commit
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    unread = git(repo, "rev-parse", "HEAD")
    git(repo, "gc", "-q")  # packed: not ours to read, unless read while loose (it is the same)
    assert tree_of(common, unread) is None
    assert tree_of(common, commit) == git(repo, "rev-parse", f"{commit}^{{tree}}")
    assert tree_of(common, "not a sha") is None


def test_refs_under_a_prefix_as_git_tells_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    common, prefix = repo / ".git", "refs/agent-loop/landed/"
    assert any_under(common, prefix) is False
    git(repo, "update-ref", prefix + "abc", "HEAD")
    assert any_under(common, prefix) is True        # loose
    git(repo, "pack-refs", "--all")
    assert not (common / prefix / "abc").exists()
    assert any_under(common, prefix) is True        # packed
    git(repo, "update-ref", "-d", prefix + "abc")
    assert any_under(common, prefix) is False       # gone from both
    git(repo, "update-ref", "refs/agent-loop/kept/x", "HEAD")
    assert any_under(common, prefix) is False       # another prefix's


def test_packed_refs_read_once_are_read_again_once_rewritten(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # Kept however new the file is (else a file written a moment ago is read every time).
    monkeypatch.setattr(refs, "RACY_NS", 0)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "other")
    git(repo, "pack-refs", "--all")
    common = repo / ".git"
    assert branch_tip(common, "refs/heads/other") == first
    assert branch_tip(common, "refs/stash") == ""
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    git(repo, "branch", "-f", "other", "HEAD")
    git(repo, "pack-refs", "--all")  # written again, with other's new commit
    assert not (common / "refs" / "heads" / "other").exists()
    assert branch_tip(common, "refs/heads/other") == git(repo, "rev-parse", "HEAD") != first
    git(repo, "branch", "-D", "-q", "other")  # gone from packed-refs too
    assert branch_tip(common, "refs/heads/other") == ""
    (common / "packed-refs").unlink()
    assert branch_tip(common, "refs/heads/main") == ""


def test_packed_refs_written_just_now_are_read_again_whatever_their_stat(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A packed-refs written within RACY_NS of its read is not kept: a coarse clock can give the
    # next one written in place the same stat (here: the very same one). One written long
    # before is kept, and then the same stat is the same file.
    import os
    import time
    from types import SimpleNamespace

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    second = git(repo, "rev-parse", "HEAD")
    common = repo / ".git"
    packed = common / "packed-refs"
    real_stat = os.stat

    def read_twice(ctime_ns: int) -> tuple[str | None, str | None]:
        packed.write_text(f"{first} refs/heads/other\n")
        held = real_stat(packed)
        same = SimpleNamespace(st_dev=held.st_dev, st_ino=held.st_ino, st_size=held.st_size,
                               st_mtime_ns=held.st_mtime_ns, st_ctime_ns=ctime_ns)
        with monkeypatch.context() as patch:
            patch.setattr(os, "stat", lambda path, *a, **k: same if os.fspath(path) == str(
                packed) else real_stat(path, *a, **k))
            before = branch_tip(common, "refs/heads/other")
            packed.write_text(f"{second} refs/heads/other\n")  # in place: same inode, size
            return before, branch_tip(common, "refs/heads/other")

    assert read_twice(time.time_ns()) == (first, second)  # just now: read again
    refs._packed_seen.clear()
    assert read_twice(time.time_ns() - 2 * refs.RACY_NS) == (first, first)  # long ago: kept


def test_a_repository_turned_to_reftable_is_left_to_git(tmp_path: Path) -> None:
    """Whether a repository keeps its refs in files is looked at once, so a migration to
    reftable made later is seen where the files fail: HEAD names `refs/heads/.invalid`, and
    `refs/heads` is a file (as git leaves them), never read as an unborn branch."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "update-ref", "refs/agent-loop/landed/abc", "HEAD")
    common = repo / ".git"
    assert told(repo) == ("refs/heads/main", git(repo, "rev-parse", "HEAD"))
    assert branch_tip(common, "refs/heads/main")
    assert any_under(common, "refs/agent-loop/landed/") is True
    # What `git refs migrate --ref-format=reftable` leaves (git 2.46; the git here may be older).
    for folder in ("heads", "tags", "agent-loop"):
        proc.run(["rm", "-rf", str(common / "refs" / folder)])
    (common / "refs" / "heads").write_text("this repository uses the reftable format\n")
    (common / "reftable").mkdir()
    (common / "HEAD").write_text("ref: refs/heads/.invalid\n")
    assert where(common, common) is None
    assert branch_tip(common, "refs/heads/main") is None
    assert any_under(common, "refs/agent-loop/landed/") is None


def test_linked_worktrees_as_git_lists_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    dot_git = repo / ".git"
    assert no_linked_worktrees(dot_git)
    lane = tmp_path / "lane"
    git(repo, "worktree", "add", "-q", str(lane))
    assert not no_linked_worktrees(dot_git)
    assert healthy_worktree(lane)
    assert not healthy_worktree(repo)  # the main checkout is no linked worktree
    git(repo, "worktree", "lock", str(lane))
    assert "locked" in git(repo, "worktree", "list", "--porcelain")
    assert not healthy_worktree(lane)
    git(repo, "worktree", "unlock", str(lane))
    moved = tmp_path / "moved"
    lane.rename(moved)  # moved by hand: git lists it prunable, its copy is not where git says
    assert "prunable" in git(repo, "worktree", "list", "--porcelain")
    assert not healthy_worktree(moved)
    git(repo, "worktree", "prune")
    assert no_linked_worktrees(dot_git)  # git removes the folder with the last of them
    git(repo, "worktree", "add", "-q", str(lane))
    git(repo, "worktree", "remove", str(lane))
    assert no_linked_worktrees(dot_git)


def test_a_worktrees_commondir_is_damaged_as_git_would_find_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "lane"))
    common = repo / ".git"
    own = common / "worktrees" / "lane"
    assert registration.commondir_damage(own, common) is None  # as git wrote it
    assert git(tmp_path / "lane", "rev-parse", "--git-common-dir") == str(common)
    # The worktrees folder moved away and linked back: `../..` from the lane's own git dir is
    # that folder's new parent, not the repository's git dir, and git finds no repository.
    (tmp_path / "away").mkdir()
    (common / "worktrees").rename(tmp_path / "away" / "worktrees")
    (common / "worktrees").symlink_to(tmp_path / "away" / "worktrees")
    assert registration.commondir_damage(own, common) == "../.."
    assert proc.run(["git", "rev-parse", "--git-common-dir"], cwd=tmp_path / "lane",
                    check=False).returncode != 0
    # Written as an absolute path to the repository's git dir, it is whole again.
    (own / "commondir").write_text(f"{common}\n")
    assert registration.commondir_damage(own, common) is None
