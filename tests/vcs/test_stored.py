"""agentloop.vcs.git.stored: whether git's object store holds an object, read off its files,
agrees with `git cat-file -e` for every object of a real repository, loose and packed (pack
index versions 1 and 2), and for names it lacks."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from agentloop.vcs.git.stored import holds
from tests.support.repos import git, make_repo


def every_object(work: Path) -> list[str]:
    return [line.split()[0] for line in git(work, "rev-list", "--all", "--objects").splitlines()]


def absent(count: int) -> list[str]:
    return [hashlib.sha1(str(n).encode()).hexdigest() for n in range(count)]


def git_says(work: Path, sha: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", sha], cwd=work).returncode == 0


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = make_repo(tmp_path / "project", files={f"f{n}.txt": f"{n}\n" for n in range(40)})
    for n in range(20):
        (work / f"f{n}.txt").write_text(f"again {n}\n")
        git(work, "commit", "-qam", f"change {n}")
    return work


@pytest.mark.parametrize("how", ["loose", "packed", "packed, index version 1"])
def test_holds_agrees_with_git(work: Path, how: str) -> None:
    if how == "packed":
        git(work, "gc", "-q", "--prune=now")
    elif how != "loose":
        git(work, "-c", "pack.indexVersion=1", "gc", "-q", "--prune=now")
        index = next((work / ".git" / "objects" / "pack").glob("*.idx"))
        assert index.read_bytes()[:4] != b"\xfftOc"  # a version 1 index has no magic
    names = every_object(work)
    assert len(names) > 60
    for sha in names:
        assert holds(work / ".git", sha) is True, sha
    for sha in absent(200):
        assert holds(work / ".git", sha) is git_says(work, sha) is False, sha


def test_a_pruned_commit_is_not_held_and_borrowed_objects_cannot_be_told(
        work: Path, tmp_path: Path) -> None:
    git(work, "gc", "-q", "--prune=now")
    head = git(work, "rev-parse", "HEAD").strip()
    (work / "new.txt").write_text("new\n")
    git(work, "add", "new.txt")
    tree = git(work, "write-tree").strip()
    made = git(work, "commit-tree", tree, "-p", head, "-m", "landed").strip()
    assert holds(work / ".git", made) is True  # loose, nothing names it yet
    git(work, "prune", "--expire=now")
    assert holds(work / ".git", made) is False and not git_says(work, made)
    assert holds(work / ".git", head) is True
    clone = tmp_path / "shared"
    git(tmp_path, "clone", "-q", "--shared", str(work), str(clone))
    assert holds(clone / ".git", absent(1)[0]) is None
