"""An agent's writes inside a git submodule (agentloop.run.submodule_files): in a lane, whose
submodule folder is empty and ignored by git and jj alike, they are moved out before the lane
goes and said; in your checkout, the submodule the task left changed is said, and the task's
commit never takes the submodule out. Real repositories with a real submodule (file protocol),
the fake claude writing into it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, jj, state_of
from tests.support.runner import agent_loop

KEPT = Path(".agent-loop/submodule-files/task-1/vendor/lib")


def with_submodule(tmp_path: Path, plan: str, colocated: bool = False) -> Path:
    """A repository holding the submodule vendor/lib (a repository of its own beside it, added
    with the file protocol), `plan` as its committed tasks.md; the repository's folder."""
    lib, work = tmp_path / "lib", tmp_path / "project"
    for folder in (lib, work):
        folder.mkdir()
        git(folder, "init", "-q", "-b", "main")
    (lib / "lib.txt").write_text("lib\n")
    git(lib, "add", "lib.txt")
    git(lib, "commit", "-qm", "lib")
    (work / "README.md").write_text("hello\n")
    (work / "tasks.md").write_text(plan)
    git(work, "add", "README.md", "tasks.md")
    git(work, "commit", "-qm", "initial")
    git(work, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
        "vendor/lib")
    git(work, "commit", "-qm", "the lib")
    if colocated:
        jj(work, "git", "init", "--colocate")
    return work


WRITE = "- write into the lib\n  FAKE: write vendor/lib/new.txt x\n"


def test_a_lanes_write_inside_a_submodule_is_kept_and_said(tmp_path: Path,
                                                           fake_claude: FakeClaude) -> None:
    work = with_submodule(tmp_path, WRITE + "- and beside it\n  FAKE: write top.txt top\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    # Out of the lane before it went, whole.
    assert (work / KEPT / "new.txt").read_text() == "x\n"
    lines = done.stdout.splitlines()
    said = [line for line in lines if "inside submodule vendor/lib" in line]
    assert said and f"kept in {KEPT}/" in said[0] and "new.txt" in said[0]
    # Pasted as printed in a subfolder of the checkout, it copies them into the submodule.
    copy = re.search(r"`(cp -R [^`]+)`", said[0])
    assert copy is not None, said[0]
    (work / "docs").mkdir()
    subprocess.run(["bash", "-c", copy.group(1)], cwd=work / "docs", check=True)
    assert (work / "vendor" / "lib" / "new.txt").read_text() == "x\n"
    (work / "vendor" / "lib" / "new.txt").unlink()
    assert not any("changed no files" in line for line in lines)
    assert any(line.startswith("look at: task 1 wrote new.txt inside submodule") for line in lines)
    # Completed with the line as its note: no advisor, no second run of the agent.
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    assert "inside submodule vendor/lib" in tasks[0]["error"]
    assert len(fake_claude.task_runs()) == 2 and len(fake_claude.calls()) == 2
    # The next task's lane folder started empty: task 2 is not blamed for task 1's file.
    assert not (work / ".agent-loop/submodule-files/task-2").exists()
    # The submodule itself untouched; the repository still holds it.
    assert not (work / "vendor/lib/new.txt").exists()
    assert "160000 commit" in git(work, "ls-tree", "HEAD", "vendor/lib")


def test_in_your_checkout_new_files_in_a_submodule_are_said_and_the_submodule_stays(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The agent's own `git status` refreshes the index: the commit took the long way then, and
    # removed the submodule from the repository.
    work = with_submodule(tmp_path, WRITE + "  FAKE: bash git status --short\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "160000 commit" in git(work, "ls-tree", "HEAD", "vendor/lib")
    assert git(work, "log", "-1", "--format=%s") == "the lib\n"  # nothing the task's
    assert state_of(work)["tasks"][0]["change_id"] is None
    assert (work / "vendor/lib/new.txt").read_text() == "x\n"
    assert any("task 1 left uncommitted changes inside submodule vendor/lib" in line
               for line in done.stdout.splitlines())


def test_in_your_checkout_a_commit_inside_a_submodule_is_recorded_and_said(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = with_submodule(tmp_path, WRITE + "  FAKE: bash cd vendor/lib && git add new.txt && "
                          "git commit -qm inside\n- then\n  FAKE: write top.txt top\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    inside = git(work / "vendor/lib", "rev-parse", "HEAD").strip()
    task_1 = state_of(work)["tasks"][0]["change_id"]
    assert f"160000 commit {inside}" in git(work, "ls-tree", task_1, "vendor/lib")
    said = [line for line in done.stdout.splitlines() if "commit inside submodule" in line]
    # Said once: task 2 is not blamed for the move task 1's commit recorded.
    assert len(said) == 2 and "task 1 made a commit inside submodule vendor/lib" in said[0]
    assert said[1].startswith("look at: task 1")


@pytest.mark.parametrize("workplace", ["lane", "checkout"])
def test_jj_a_write_inside_a_submodule_is_kept_and_said(tmp_path: Path, fake_claude: FakeClaude,
                                                        workplace: str) -> None:
    work = with_submodule(tmp_path, WRITE, colocated=True)
    done = agent_loop(work, "--vcs", "jj", "--workplace", workplace, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    if workplace == "lane":
        assert (work / KEPT / "new.txt").read_text() == "x\n"
        assert any(f"kept in {KEPT}/" in line for line in done.stdout.splitlines())
    else:
        assert (work / "vendor/lib/new.txt").read_text() == "x\n"
        assert any("left uncommitted changes inside submodule vendor/lib" in line
                   for line in done.stdout.splitlines())
    assert "changed no files" not in done.stdout


def test_with_require_changes_a_write_only_inside_a_submodule_is_a_change(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Failed as "no changes", it would pay the advisor and a run that lands in the same
    # empty folder.
    work = with_submodule(tmp_path, WRITE)
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill",
                      "--require-changes", "--max-attempts", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / KEPT / "new.txt").read_text() == "x\n"
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"]
    assert len(fake_claude.calls()) == 1


def test_status_says_a_completed_tasks_submodule_files_were_kept(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`(empty)` alone reads as "did nothing": the line that says where its files are, too."""
    work = with_submodule(tmp_path, WRITE)
    assert agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill"
                      ).returncode == 0
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    row, *rest = status.stdout.split("   1 completed", 1)[1].splitlines()
    assert "(empty)" in row
    noted = [line.strip() for line in rest if line.startswith("       note: ")]
    assert noted and "task 1 wrote new.txt inside submodule vendor/lib" in noted[0]
    assert f"kept in {KEPT}/" in noted[0]


def test_a_failed_attempts_writes_inside_a_submodule_are_kept_as_it_ends(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """A failed attempt's lane is reset for the next one, or removed with the run: what it wrote
    in the submodule folder is kept as the attempt ends, said then and in the closing lines,
    not left in the lane for a later successful attempt that may never come."""
    work = with_submodule(tmp_path, "- write into the lib\n  FAKE: write vendor/lib/new.txt x\n"
                          "  FAKE: fail 9\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill",
                      "--max-attempts", "1")
    assert done.returncode == 4, done.stdout + done.stderr
    assert (work / KEPT / "new.txt").read_text() == "x\n"
    lines = done.stdout.splitlines()
    assert any(f"task 1's attempt, which did not finish, wrote new.txt inside submodule "
               f"vendor/lib (kept in {KEPT}/)" in line for line in lines)
    assert any(line.startswith("look at: task 1") and f"{KEPT.parent.parent}/" in line
               for line in lines), done.stdout
    assert [t["status"] for t in state_of(work)["tasks"]] == ["failed"]


def test_what_a_killed_attempt_wrote_inside_a_submodule_is_kept_by_the_next_run(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """kill -9 while the agent works, after it wrote into the submodule folder: the next run
    goes on in that lane (a new process, which did not see the folder empty) and keeps the
    file, where it took it for the repository's and it went with the lane."""
    work = with_submodule(tmp_path, "- write into the lib\n  FAKE: write top.txt top\n")
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({"write into the lib": [
        "FAKE: write vendor/lib/half.txt half", "FAKE: pause 60"]}))
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                             "--no-distill"], cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(directives)},
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not list(work.glob(".agent-loop/lanes/*/vendor/lib/half.txt")) and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        assert list(work.glob(".agent-loop/lanes/*/vendor/lib/half.txt"))
    finally:
        os.killpg(tool.pid, signal.SIGKILL)
        tool.wait()
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / KEPT / "half.txt").read_text() == "half\n"
    assert any("half.txt inside submodule vendor/lib" in line
               for line in done.stdout.splitlines())
    assert not list(work.glob(".agent-loop/lanes/*"))


def embedded(tmp_path: Path) -> Path:
    """A repository holding `nested`, a repository of its own that `git add` recorded as a
    submodule (a gitlink) with no `.gitmodules` entry; the repository's folder."""
    work = tmp_path / "project"
    nested = work / "nested"
    nested.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    git(nested, "init", "-q", "-b", "main")
    (nested / "n.txt").write_text("n\n")
    git(nested, "add", "n.txt")
    git(nested, "commit", "-qm", "n")
    (work / "README.md").write_text("hello\n")
    git(work, "add", "README.md", "nested")
    git(work, "commit", "-qm", "initial")
    assert "160000 commit" in git(work, "ls-tree", "HEAD", "nested")
    assert not (work / ".gitmodules").exists()
    return work


@pytest.mark.parametrize("vcs", ["git", "jj"])
def test_a_nested_repository_git_records_without_gitmodules_is_looked_at_too(
        tmp_path: Path, fake_claude: FakeClaude, vcs: str) -> None:
    """A lane holds such a folder empty too, and git (and jj) ignores the files in it: what the
    agent wrote there went with the lane, and the task "changed no files"."""
    work = embedded(tmp_path)
    if vcs == "jj":
        jj(work, "git", "init", "--colocate")
    (work / "tasks.md").write_text("- write into nested\n  FAKE: write nested/new.txt x\n"
                                   "  FAKE: write top.txt t\n")
    done = agent_loop(work, "--vcs", vcs, "--workplace", "lane", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    kept = work / ".agent-loop/submodule-files/task-1/nested"
    assert (kept / "new.txt").read_text() == "x\n"
    assert any("new.txt inside submodule nested" in line for line in done.stdout.splitlines())
    assert (work / "top.txt").read_text() == "t\n"   # the task's other file, committed
    assert not (work / "nested/new.txt").exists()


def test_in_your_checkout_a_nested_repository_without_gitmodules_is_said(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """In your checkout the agent's file stays in your nested repository (nothing lost), but
    the run said the task "changed no files"."""
    work = embedded(tmp_path)
    (work / "tasks.md").write_text("- write into nested\n  FAKE: write nested/new.txt x\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "nested/new.txt").read_text() == "x\n"
    assert any("task 1 left uncommitted changes inside submodule nested" in line
               for line in done.stdout.splitlines())
    assert "changed no files" not in done.stdout


def test_a_nested_repository_is_found_with_a_split_index_too(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """core.splitIndex (or `git update-index --split-index`): the lane's `index` holds only
    what changed since its shared index (sharedindex.<sha>), where the gitlink's entry is:
    one search of `index`'s bytes finds no gitlink, and the agent's file went with the lane."""
    work = embedded(tmp_path)
    git(work, "config", "core.splitIndex", "true")
    git(work, "update-index", "--split-index")
    (work / "tasks.md").write_text("- write into nested\n  FAKE: write nested/new.txt x\n"
                                   "  FAKE: write top.txt t\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    kept = work / ".agent-loop/submodule-files/task-1/nested"
    assert (kept / "new.txt").read_text() == "x\n", done.stdout


def test_in_your_checkout_an_agent_adding_a_submodule_without_sandbox_keeps_it(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Its git folder is one git made under .git/modules after the run began: without
    --sandbox the agent runs as you, and that folder is not moved aside as one of its own
    (agentloop.vcs.submodule_gitdirs)."""
    lib = tmp_path / "lib"
    work = with_submodule(tmp_path, f"- add one\n  FAKE: bash git -c protocol.file.allow=always "
                          f"submodule add -q {lib} vendor/other && git submodule update -q\n"
                          "- then\n  FAKE: write top.txt top\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "did not know" not in out and not (work / ".agent-loop/submodule-git-folders").exists()
    assert (work / "vendor/other/.git").is_file()
    assert git(work, "-C", "vendor/other", "status", "--porcelain") == ""
