"""Choosing the backend: `auto` against real jj and real git, find_root, none, and bad kinds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs import find_root
from agentloop.vcs.choose import open_vcs
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.jj.backend import JjVcs
from agentloop.vcs.none import NoneVcs


@pytest.fixture(autouse=True)
def fresh_change_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pinned seed makes every jj process draw the same change id (see test_vcs_jj.py)."""
    monkeypatch.delenv("JJ_RANDOMNESS_SEED", raising=False)


@pytest.fixture
def no_jj(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with git but without jj."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert subprocess.run(["sh", "-c", "command -v jj"], capture_output=True).returncode != 0


def run(repo: Path, *argv: str) -> str:
    return proc.run(list(argv), cwd=repo).stdout


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print(1)\n")
    (root / "tasks.md").write_text("- [ ] a\n")
    return root


def git_project(tmp_path: Path) -> Path:
    root = project(tmp_path)
    run(root, "git", "init", "-q")
    run(root, "git", "add", "main.py")
    run(root, "git", "commit", "-q", "-m", "initial")
    return root


def one_task(vcs: object, root: Path) -> None:
    assert isinstance(vcs, (JjVcs, GitVcs))
    change = vcs.begin("task")
    (root / "a.txt").write_text("a\n")
    assert vcs.finish(change, "task").files == ("a.txt",)
    vcs.close()


def test_find_root_is_the_nearest_repository(tmp_path: Path) -> None:
    deep = tmp_path / "outer" / "inner" / "deep"
    deep.mkdir(parents=True)
    assert find_root(deep) is None
    (tmp_path / "outer" / ".git").mkdir()
    assert find_root(deep) == tmp_path / "outer"
    (tmp_path / "outer" / "inner" / ".jj").mkdir()
    assert find_root(deep) == tmp_path / "outer" / "inner"
    (deep / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    assert find_root(deep) == deep


def test_find_root_starts_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("find_root started a process")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    (tmp_path / ".jj").mkdir()
    assert find_root(tmp_path) == tmp_path


def test_auto_in_a_plain_folder_inits_jj(tmp_path: Path, jj_bin: str) -> None:
    root = project(tmp_path)
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, JjVcs)
    assert vcs.prepare() == [f"initialized a jj repository in {root}"]
    assert (root / ".jj").is_dir()
    one_task(vcs, root)


def test_auto_in_a_git_repo_stays_git(tmp_path: Path, jj_bin: str) -> None:
    # With jj installed too: jj would leave git detached, away from the user's branch.
    root = git_project(tmp_path)
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, GitVcs)
    vcs.prepare()
    one_task(vcs, root)
    assert not (root / ".jj").exists()
    assert run(root, "git", "symbolic-ref", "HEAD") == "refs/heads/main\n"
    assert run(root, "git", "log", "--format=%s").splitlines() == ["task", "initial"]


def test_explicit_jj_in_a_git_repo_colocates_and_git_keeps_working(tmp_path: Path,
                                                                    jj_bin: str) -> None:
    root = git_project(tmp_path)
    vcs = open_vcs("jj", root, root / "tasks.md")
    assert isinstance(vcs, JjVcs)
    notes = vcs.prepare()
    assert notes == [f"initialized a colocated jj repository in {root}: git keeps working, on a "
                     "detached HEAD from now on (jj's way), and your branch main stays where it "
                     "is; `jj bookmark set main -r @-` after the run brings it to the tasks"]
    one_task(vcs, root)
    # git's HEAD is jj's @-: the task, right on top of the user's last commit.
    assert run(root, "git", "log", "--format=%s").splitlines() == ["task", "initial"]
    assert run(root, "git", "show", "--name-only", "--format=", "HEAD") == "a.txt\n"
    assert "?? tasks.md" in run(root, "git", "status", "--porcelain")
    # the note's advice does what it says: the user's branch comes to the task
    assert run(root, "git", "log", "--format=%s", "main").splitlines() == ["initial"]
    run(root, "jj", "bookmark", "set", "main", "-r", "@-")
    assert run(root, "git", "log", "--format=%s", "main").splitlines() == ["task", "initial"]


def test_explicit_jj_from_a_subfolder_of_a_git_repo_colocates_at_its_top(tmp_path: Path,
                                                                          jj_bin: str) -> None:
    root = git_project(tmp_path)
    (root / "sub").mkdir()
    vcs = open_vcs("jj", root / "sub", root / "tasks.md")
    assert vcs.prepare()[0].startswith(f"initialized a colocated jj repository in {root}: ")
    assert (root / ".jj").is_dir() and not (root / "sub" / ".jj").exists()


def test_auto_in_a_git_worktree_uses_git(tmp_path: Path, jj_bin: str) -> None:
    root = git_project(tmp_path)
    worktree = tmp_path / "worktree"
    run(root, "git", "worktree", "add", "-q", "-b", "side", str(worktree))
    (worktree / "tasks.md").write_text("- [ ] a\n")
    vcs = open_vcs("auto", worktree, worktree / "tasks.md")
    assert isinstance(vcs, GitVcs)
    notes = vcs.prepare()
    assert notes == [f"{worktree} is a git worktree, where jj cannot colocate: using git"]
    one_task(vcs, worktree)
    assert run(root, "git", "log", "--format=%s", "side").splitlines() == ["task", "initial"]
    assert not (worktree / ".jj").exists() and not (root / ".jj").exists()
    with pytest.raises(VcsError, match="git worktree, where jj cannot colocate"):
        open_vcs("jj", worktree, worktree / "tasks.md")


def test_auto_in_a_jj_repo_uses_it(tmp_path: Path, jj_bin: str) -> None:
    root = project(tmp_path)
    run(root, "jj", "git", "init", "--no-colocate")
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, JjVcs) and vcs.prepare() == []
    assert not (root / ".git").exists()
    one_task(vcs, root)


def test_auto_in_a_colocated_repo_uses_jj(tmp_path: Path, jj_bin: str) -> None:
    root = git_project(tmp_path)
    run(root, "jj", "git", "init", "--colocate")
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, JjVcs)
    # git is still on its branch: the one line that says jj leaves it behind.
    notes = vcs.prepare()
    assert len(notes) == 1 and "detached HEAD once the run begins" in notes[0], notes
    one_task(vcs, root)


def test_auto_without_jj_in_a_plain_folder_inits_git(tmp_path: Path, no_jj: None) -> None:
    root = project(tmp_path)
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, GitVcs)
    notes = vcs.prepare()
    assert notes[0] == f"initialized a git repository in {root}"
    assert (root / ".git").is_dir() and not (root / ".jj").exists()
    one_task(vcs, root)


def test_auto_without_jj_in_a_git_repo_uses_git(tmp_path: Path, no_jj: None) -> None:
    root = git_project(tmp_path)
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, GitVcs) and vcs.prepare() == []
    one_task(vcs, root)
    assert run(root, "git", "log", "--format=%s").splitlines() == ["task", "initial"]


def test_auto_without_jj_in_a_colocated_repo_uses_git(tmp_path: Path, jj_bin: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = git_project(tmp_path)
    run(root, "jj", "git", "init", "--colocate")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    vcs = open_vcs("auto", root, root / "tasks.md")
    assert isinstance(vcs, GitVcs)


def test_auto_without_jj_in_a_jj_only_repo_is_an_error(tmp_path: Path, jj_bin: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    run(root, "jj", "git", "init", "--no-colocate")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(VcsError, match="jj repository, but jj is not installed"):
        open_vcs("auto", root, root / "tasks.md")


def test_explicit_jj_without_jj_is_an_error(tmp_path: Path, no_jj: None) -> None:
    with pytest.raises(VcsError, match="jj is not installed"):
        open_vcs("jj", tmp_path, tmp_path / "tasks.md")


def test_explicit_git_in_a_jj_capable_world_is_git(tmp_path: Path, jj_bin: str) -> None:
    root = git_project(tmp_path)
    vcs = open_vcs("git", root, root / "tasks.md")
    assert isinstance(vcs, GitVcs) and vcs.prepare() == []
    assert not (root / ".jj").exists()


def test_none_backend_does_nothing(tmp_path: Path) -> None:
    vcs = open_vcs("none", tmp_path, tmp_path / "tasks.md")
    assert isinstance(vcs, NoneVcs)
    change = vcs.begin("task")
    (tmp_path / "a.txt").write_text("a\n")
    assert vcs.finish(change, "task").change_id == ""
    vcs.abandon(change)
    assert (tmp_path / "a.txt").exists() and vcs.diff(change) == ""
    assert not (tmp_path / ".git").exists()


def test_unknown_kind_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(VcsError, match="auto, jj, git, none"):
        open_vcs("svn", tmp_path, tmp_path / "tasks.md")
