"""A submodule's `.git` an agent pointed at a git folder of its own: found against what was
recorded at the run's start and moved aside (agentloop.vcs.submodule_gitdirs). Real git repos."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agentloop.vcs import submodule_gitdirs as gd
from tests.support.repos import git, make_repo


@pytest.fixture(autouse=True)
def _forget() -> None:
    gd._trusted.clear()
    gd._stamps.clear()


def with_sub(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    make_repo(work, files={"a.txt": "a\n"})
    sub = tmp_path / "lib"
    make_repo(sub, files={"lib.txt": "lib\n"})
    git(work, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "deps/lib")
    git(work, "commit", "-qm", "submodule")
    return work


def guard(work: Path, sandboxed: bool = True) -> list[gd.MovedAside]:
    return gd.guard(work, work / ".agent-loop" / "kept", sandboxed)


def own_copy(work: Path, tmp_path: Path) -> Path:
    """A copy of the submodule's git folder, elsewhere: the agent's."""
    own = tmp_path / "own"
    shutil.copytree(work / ".git" / "modules" / "deps" / "lib", own)
    return own


def test_a_submodule_as_git_made_it_stays(tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    gd.record(work)
    assert guard(work) == []
    assert (work / "deps" / "lib" / ".git").is_file()


@pytest.mark.parametrize("how", ["absolute", "relative", "dotdot", "symlink",
                                 "symlinked gitfile"])
def test_a_gitfile_naming_a_folder_of_the_agent_is_moved_aside(tmp_path: Path, how: str) -> None:
    work = with_sub(tmp_path)
    gd.record(work)
    own = own_copy(work, tmp_path)
    dot = work / "deps" / "lib" / ".git"
    dot.unlink()
    if how == "absolute":
        dot.write_text(f"gitdir: {own}\n")
    elif how == "relative":
        dot.write_text(f"gitdir: {os.path.relpath(own, dot.parent)}\n")
    elif how == "dotdot":   # through the modules folder and out again
        dot.write_text("gitdir: ../../.git/modules/deps/lib/../../../../../own\n")
    elif how == "symlink":  # `.git` a symlink to a folder
        dot.symlink_to(own)
    else:
        (tmp_path / "gitfile").write_text(f"gitdir: {own}\n")
        dot.symlink_to(tmp_path / "gitfile")
    moved = guard(work)
    assert [m.path for m in moved] == ["deps/lib"]
    assert moved[0].target == str(own.resolve())
    assert not os.path.lexists(dot)
    assert os.path.lexists(moved[0].kept)
    assert moved[0].kept.parent == work / ".agent-loop" / "kept" / "deps" / "lib"
    assert own.is_dir()  # the agent's folder is kept, never deleted
    assert guard(work) == []


def test_a_new_gitlink_with_its_own_git_folder_is_moved_aside(tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    gd.record(work)
    ev = work / "deps" / "ev"
    make_repo(ev, files={"x.txt": "x\n"})
    git(work, "add", "deps/ev")
    moved = guard(work)
    assert [m.path for m in moved] == ["deps/ev"] and moved[0].kept.is_dir()
    assert not (ev / ".git").exists()


def test_a_new_folder_under_modules_is_trusted_only_without_sandbox(tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    gd.record(work)
    modules = work / ".git" / "modules"
    shutil.copytree(modules / "deps" / "lib", modules / "evil")
    dot = work / "deps" / "lib" / ".git"
    dot.write_text("gitdir: ../../.git/modules/evil\n")
    assert guard(work, sandboxed=False) == []
    assert [m.path for m in guard(work, sandboxed=True)] == ["deps/lib"]


def test_an_agent_running_submodule_update_without_sandbox_keeps_its_submodule(
        tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(work), str(clone))  # its submodule not checked out
    gd.record(clone)
    git(clone, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    assert (clone / "deps" / "lib" / ".git").is_file()
    assert guard(clone, sandboxed=False) == []
    assert git(clone, "-C", "deps/lib", "status", "--porcelain") == ""


def test_an_unabsorbed_submodule_as_found_at_start_stays(tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    git(work, "-C", "deps/lib", "status")
    lib = work / "deps" / "lib"
    (lib / ".git").unlink()
    shutil.move(str(work / ".git" / "modules" / "deps" / "lib"), str(lib / ".git"))
    git(work, "config", "-f", str(lib / ".git" / "config"), "--unset", "core.worktree")
    gd.record(work)
    assert guard(work) == []
    assert (lib / ".git").is_dir()


def test_a_nested_submodule_of_the_agent_is_moved_aside(tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    gd.record(work)
    lib = work / "deps" / "lib"
    inner = lib / "inner"
    make_repo(inner, files={"i.txt": "i\n"})
    git(lib, "add", "inner")
    assert [m.path for m in guard(work)] == ["deps/lib/inner"]


def test_a_symlinked_folder_on_the_way_is_left_alone(tmp_path: Path) -> None:
    work = with_sub(tmp_path)
    gd.record(work)
    outside = tmp_path / "outside" / "lib"
    make_repo(outside, files={"o.txt": "o\n"})
    shutil.rmtree(work / "deps")
    (work / "deps").symlink_to(tmp_path / "outside")
    assert guard(work) == []   # git goes through no symlink; nothing outside is moved
    assert (outside / ".git").is_dir()


def test_no_submodule_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    make_repo(work, files={"a.txt": "a\n"})
    monkeypatch.setattr(gd.Git, "run", lambda *a, **k: pytest.fail("a process ran"))
    gd.record(work)
    assert guard(work) == []


def test_an_unabsorbed_submodule_whose_config_changed_is_moved_aside_under_sandbox(
        tmp_path: Path) -> None:
    """Its git folder lies in the working copy, which a sandboxed agent writes."""
    work = with_sub(tmp_path)
    lib = work / "deps" / "lib"
    (lib / ".git").unlink()
    shutil.move(str(work / ".git" / "modules" / "deps" / "lib"), str(lib / ".git"))
    git(work, "config", "-f", str(lib / ".git" / "config"), "--unset", "core.worktree")
    gd.record(work)
    git(lib, "config", "filter.evil.clean", "cat")
    assert guard(work, sandboxed=False) == []
    moved = guard(work, sandboxed=True)
    assert [m.path for m in moved] == ["deps/lib"] and (moved[0].kept / "config").is_file()


def test_a_git_folder_that_cannot_be_moved_at_all_is_one_error_that_says_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither under the plan's folder nor beside itself (a busy folder, a read-only one): an
    # error the run stops on in one line, never an OSError's traceback.
    import errno

    work = with_sub(tmp_path)
    gd.record(work)
    own = own_copy(work, tmp_path)
    dot = work / "deps" / "lib" / ".git"
    dot.write_text(f"gitdir: {own}\n")

    def busy(a: object, b: object) -> None:
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(gd.os, "rename", busy)
    monkeypatch.setattr(gd, "_move", busy)
    with pytest.raises(gd.NotMovedAside) as raised:
        guard(work)
    assert raised.value.moved == [] and raised.value.failed.path == "deps/lib"
    assert dot.is_file()
    line = gd.not_moved_line(raised.value.failed, raised.value.error, "kept/.git")
    assert "could not move deps/lib/.git" in line and "Device or resource busy" in line
    assert "before running again" in line and "\n" not in line


@pytest.mark.parametrize("how", ["update", "move"])
def test_the_way_back_runs_as_printed_from_a_subfolder(tmp_path: Path, how: str) -> None:
    work = with_sub(tmp_path)
    lib = work / "deps" / "lib"
    if how == "update":  # a gitfile pointed at a folder of the agent's: git's own is there
        gd.record(work)
        own = own_copy(work, tmp_path)
        (lib / ".git").unlink()
        (lib / ".git").write_text(f"gitdir: {own}\n")
        moved = guard(work)
        # Your config lets a submodule come from a file URL, as the test's lib does.
        config = Path(os.environ["GIT_CONFIG_GLOBAL"])
        config.write_text(config.read_text() + "[protocol \"file\"]\n\tallow = always\n")
    else:  # the only git folder of a submodule not absorbed, its config changed
        (lib / ".git").unlink()
        shutil.move(str(work / ".git" / "modules" / "deps" / "lib"), str(lib / ".git"))
        git(work, "config", "-f", str(lib / ".git" / "config"), "--unset", "core.worktree")
        gd.record(work)
        git(lib, "config", "filter.evil.clean", "cat")
        moved = guard(work, sandboxed=True)
    line = gd.moved_line(moved, {m.kept: "kept" for m in moved}, work)
    command = re.search(r"`((?:git -C|git submodule|mv) [^`]+)`", line)
    assert command is not None, line
    (work / "docs").mkdir()
    done = subprocess.run(["bash", "-c", command.group(1)], cwd=work / "docs",
                          capture_output=True, text=True)
    assert done.returncode == 0, (command.group(1), done.stderr)
    assert git(work, "-C", "deps/lib", "rev-parse", "--is-inside-work-tree").strip() == "true"
    assert (lib / "lib.txt").read_text() == "lib\n"
