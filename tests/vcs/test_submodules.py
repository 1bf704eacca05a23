"""agentloop.vcs.submodules and the git backend's reading of a submodule: a lane's submodule
folder swept, your checkout's submodules looked at, and a submodule whose own files changed is
no change of the superproject's tree."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs import submodules
from agentloop.vcs.git.repo import GitRepo
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.status import parse_status
from tests.run.test_submodule_files import with_submodule
from tests.support.repos import git


def test_a_lanes_submodule_folder_swept_out(tmp_path: Path) -> None:
    lane, keep = tmp_path / "lane", tmp_path / "keep"
    (lane / "vendor/lib").mkdir(parents=True)
    (lane / "vendor/empty").mkdir(parents=True)
    (lane / ".gitmodules").write_text('[submodule "l"]\n\tpath = vendor/lib\n'
                                      '[submodule "e"]\n\tpath = vendor/empty\n'
                                      '[submodule "g"]\n\tpath = vendor/gone\n')
    submodules.lane_seen(lane)  # as the lane's first task begins: every folder empty
    (lane / "vendor/lib/src").mkdir()
    (lane / "vendor/lib/src/a.c").write_text("a\n")
    (lane / "vendor/lib/b.txt").write_text("b\n")
    moved = submodules.sweep(lane, keep)
    assert [(m.path, m.files, m.kept) for m in moved] == [
        ("vendor/lib", ("b.txt", "src/a.c"), keep / "vendor/lib")]
    assert (keep / "vendor/lib/src/a.c").read_text() == "a\n"
    assert list((lane / "vendor/lib").iterdir()) == []
    # Written again (a second attempt): kept beside the first, never over it.
    (lane / "vendor/lib/b.txt").write_text("again\n")
    assert submodules.sweep(lane, keep)[0].kept == keep / "vendor/lib-2"
    assert (keep / "vendor/lib/b.txt").read_text() == "b\n"


def test_a_folder_gitmodules_names_that_held_files_from_the_start_is_never_swept(
        tmp_path: Path) -> None:
    """A stale .gitmodules entry (a submodule turned into a vendored copy) or an agent's edit of
    the file names a folder of tracked files: sweeping it deleted them from the task's commit,
    and so from your branch (an independent review found it)."""
    lane, keep = tmp_path / "lane", tmp_path / "keep"
    (lane / "vendor/lib").mkdir(parents=True)
    (lane / "vendor/lib/a.c").write_text("tracked\n")
    (lane / ".gitmodules").write_text('[submodule "l"]\n\tpath = vendor/lib\n')
    submodules.lane_seen(lane)
    (lane / "vendor/lib/new.c").write_text("the agent's\n")
    assert submodules.sweep(lane, keep) == []
    assert (lane / "vendor/lib/a.c").read_text() == "tracked\n" and not keep.exists()


def test_a_checked_out_submodule_is_never_swept(tmp_path: Path) -> None:
    work = with_submodule(tmp_path, "- a task\n")
    assert submodules.sweep(work, tmp_path / "keep") == []
    assert (work / "vendor/lib/lib.txt").exists()


def test_your_checkouts_submodules_looked_at(tmp_path: Path) -> None:
    work = with_submodule(tmp_path, "- a task\n")
    assert submodules.look(work) == {}
    (work / "vendor/lib/new.txt").write_text("x\n")
    assert submodules.look(work) == {"vendor/lib": "S..U"}
    assert submodules.look(tmp_path / "lib") is None  # no submodule: no process


def test_a_submodules_own_edits_are_no_change_of_the_tree(tmp_path: Path) -> None:
    work = with_submodule(tmp_path, "- a task\n")
    (work / "vendor/lib/new.txt").write_text("x\n")
    (work / "vendor/lib/lib.txt").write_text("changed\n")
    assert "vendor/lib" not in GitRepo(Git(work)).status().paths
    # Moved by a commit inside it: a change, which a tree built by hand records as the
    # submodule's new commit (never as a folder to remove).
    git(work / "vendor/lib", "commit", "-qam", "inside")
    assert "vendor/lib" in GitRepo(Git(work)).status().paths
    repo = GitRepo(Git(work))
    assert repo.locate()
    head = git(work, "rev-parse", "HEAD").strip()
    inside = git(work / "vendor/lib", "rev-parse", "HEAD").strip()
    sha = repo.commit(head, {"vendor/lib"}, "the move")
    assert sha is not None
    assert git(work, "ls-tree", sha, "vendor/lib").split()[:3] == ["160000", "commit", inside]


def test_status_keeps_a_submodule_out_only_while_its_commit_stands() -> None:
    entry = "1 .M S{} 160000 160000 160000 {} {} vendor/lib"
    sha = "a" * 40
    assert not parse_status(entry.format("..U", sha, sha)).paths
    assert not parse_status(entry.format(".M.", sha, sha)).paths
    assert parse_status(entry.format("C..", sha, sha)).paths == {"vendor/lib"}
    staged = "1 M. SC.. 160000 160000 160000 {} {} vendor/lib".format(sha, "b" * 40)
    assert parse_status(staged).staged_paths == {"vendor/lib"}


def _lane(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a submodule at vendor/lib, and a git worktree of it (a lane), which
    holds the submodule's folder empty."""
    work = with_submodule(tmp_path, "- a task\n")
    lane = tmp_path / "lane"
    git(work, "worktree", "add", "-q", "--detach", str(lane))
    submodules.lane_seen(lane)
    return work, lane


def test_a_lane_submodule_checked_out_by_git_stays(tmp_path: Path) -> None:
    _work, lane = _lane(tmp_path)
    git(lane, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    assert (lane / "vendor/lib/.git").is_file()
    assert submodules.sweep(lane, tmp_path / "keep") == []


def test_a_lane_submodule_whose_git_file_names_the_agents_own_folder_is_swept(
        tmp_path: Path) -> None:
    """Taken for git's checkout before, it stayed, and agent-loop's git in the lane ran what
    that folder's config says (a filter) as the user."""
    work, lane = _lane(tmp_path)
    own = tmp_path / "own"
    git(tmp_path, "clone", "-q", "--bare", str(work / ".git" / "modules" / "vendor" / "lib"),
        str(own))
    (lane / "vendor/lib/.git").write_text(f"gitdir: {own}\n")
    (lane / "vendor/lib/lib.txt").write_text("lib\n")
    moved = submodules.sweep(lane, tmp_path / "keep", sandboxed=True)
    assert [(m.path, m.files) for m in moved] == [("vendor/lib", (".git", "lib.txt"))]
    assert list((lane / "vendor/lib").iterdir()) == [] and own.is_dir()
