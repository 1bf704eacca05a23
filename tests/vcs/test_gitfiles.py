"""A path's state and putting it back: the git backend's side of the working tree."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from agentloop.vcs.git.files import MISSING, plain, put_back, state_of


@pytest.fixture
def odb(tmp_path: Path) -> git.db.GitCmdObjectDB:
    return git.Repo.init(tmp_path / "repo").odb


def test_plain_paths_are_git_paths_only() -> None:
    assert plain("a/b.txt") and plain(".gitignore") and plain("a/.b")
    for odd in ("/etc/passwd", "../x", "a/../../x", "./a", "a//b", ".git/config", "a/.git/x", ""):
        assert not plain(odd), odd


def test_states_and_putting_them_back(tmp_path: Path, odb: git.db.GitCmdObjectDB) -> None:
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "link").symlink_to("run.sh")
    kept = {rel: state_of(tmp_path, rel, odb) for rel in ("run.sh", "link", "gone")}
    assert kept["run.sh"].startswith("100755:") and kept["link"] == "link:run.sh"
    assert kept["gone"] == MISSING
    assert state_of(tmp_path, "run.sh") == kept["run.sh"]  # hashing alone gives the same sha
    (tmp_path / "run.sh").unlink()
    (tmp_path / "link").unlink()
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "made.txt").write_text("x\n")
    put_back(tmp_path, "gone/made.txt", MISSING, odb)
    for rel, state in kept.items():
        put_back(tmp_path, rel, state, odb)
    assert {rel: state_of(tmp_path, rel) for rel in kept} == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "repo", "run.sh"]


def test_nothing_is_read_or_written_through_a_symlinked_folder(
        tmp_path: Path, odb: git.db.GitCmdObjectDB) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("outside\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    assert state_of(root, "sub/a.txt") == MISSING
    put_back(root, "sub/a.txt", MISSING, odb)
    put_back(root, "sub/a.txt", state_of(tmp_path, "outside/a.txt", odb), odb)
    assert (outside / "a.txt").read_text() == "outside\n"


def test_a_folder_with_something_left_in_it_is_not_removed(
        tmp_path: Path, odb: git.db.GitCmdObjectDB) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ignored.o").write_text("kept\n")
    put_back(tmp_path, "d", MISSING, odb)
    assert (tmp_path / "d" / "ignored.o").exists()
