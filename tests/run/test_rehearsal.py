"""A rehearsal stays a rehearsal (issue 23 bug 1): its state and its working copy are its own, so
the user's branch, files and the plan's real progress are left exactly as they were."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from agentloop.plan.example import starter_plan
from tests.support.fake_agent import FakeClaude
from tests.support.runner import invoke


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=False).stdout


def snapshot(repo: Path) -> tuple[str, str, str, dict[str, bytes]]:
    """What the user has: HEAD, its branch, git status, and every file outside .agent-loop."""
    files = {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
             if p.is_file() and ".git" not in p.parts and ".agent-loop" not in p.parts}
    return (git(repo, "rev-parse", "-q", "--verify", "HEAD"), git(repo, "symbolic-ref", "HEAD"),
            git(repo, "status", "--porcelain", "--untracked-files=all"), files)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "demo"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_the_readme_demo_in_a_repository_with_no_commit(repo: Path,
                                                        fake_claude: FakeClaude) -> None:
    git(repo, "init", "-q")
    assert invoke("tasks.md", "--init")[0] == 0
    before = snapshot(repo)
    code, out, err = invoke("tasks.md", "--rehearse")
    assert code == 0, err
    assert snapshot(repo) == before  # no commit on the user's (unborn) branch, no file touched
    assert "the stand-in works in the rehearsal's own copy" in out
    assert "its changes are on branch agent-loop/rehearsal-tasks-md, in " \
        ".agent-loop/lanes/rehearsal-tasks-md; your branch and files are as they were" in out
    log = git(repo, "log", "--format=%s", "agent-loop/rehearsal-tasks-md")
    assert log.count("agent-loop: ") == 4 and "an empty start" in log
    assert "3 completed" in invoke("tasks.md", "--status", "--rehearse")[1]
    code, out, _ = invoke("tasks.md", "--status")
    assert "no run yet" in out and "3 pending" in out
    # The first real run runs every task, and says the rehearsal's state is apart.
    code, out, err = invoke("tasks.md", "--vcs", "git")
    assert code == 0, err
    assert "the rehearsal's state (.agent-loop/rehearsal) is separate" in out
    assert "3 of 4 task(s) to run" in out and "agent: claude" in out
    assert len(fake_claude.task_runs()) == 3
    state = orjson.loads((repo / ".agent-loop" / "state.json").read_bytes())
    assert state["agent"] == "claude"


def test_a_rehearsal_leaves_a_dirty_tree_and_its_branch_as_they_were(repo: Path) -> None:
    git(repo, "init", "-q")
    (repo / "tasks.md").write_text(starter_plan())
    (repo / "app.py").write_text("print(1)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "app.py").write_text("print(2)  # not committed\n")
    (repo / "notes.txt").write_text("mine\n")
    before = snapshot(repo)
    for _ in range(2):  # a second rehearsal starts afresh, in the same copy
        code, out, err = invoke("tasks.md", "--rehearse")
        assert code == 0, err
        assert snapshot(repo) == before
    assert git(repo, "log", "--format=%s", "agent-loop/rehearsal-tasks-md").count(
        "agent-loop: ") == 3
    assert not (repo / "agent-loop-rehearsal.md").exists()


def test_status_of_a_rehearsal_looks_for_its_changes_in_its_own_copy(repo: Path) -> None:
    git(repo, "init", "-q")
    (repo / "tasks.md").write_text("- one\n- two\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    assert invoke("tasks.md", "--rehearse")[0] == 0
    code, out, _ = invoke("tasks.md", "--status", "--rehearse")
    assert code == 0 and "2 completed" in out
    # Not on the user's branch by design: said so, and nothing is reported missing.
    assert "rehearsal: its changes are on branch agent-loop/rehearsal-tasks-md, in " \
        ".agent-loop/lanes/rehearsal-tasks-md, not on your branch" in out
    assert "no longer in" not in out and "--again" not in out
    # A change dropped from the rehearsal's own copy is missing from it, and a rehearsal (not a
    # real run) is what does it again.
    copy = repo / ".agent-loop" / "lanes" / "rehearsal-tasks-md"
    git(copy, "reset", "-q", "--hard", "HEAD~1")
    out = invoke("tasks.md", "--status", "--rehearse")[1]
    assert "task 2's change is no longer in the rehearsal's working copy; " \
        "`agent-loop tasks.md --rehearse` rehearses the plan again" in out
    assert "task 1's" not in out
    git(repo, "worktree", "remove", "--force", str(copy))
    out = invoke("tasks.md", "--status", "--rehearse")[1]
    assert "its working copy .agent-loop/lanes/rehearsal-tasks-md is gone; its changes were " \
        "on branch agent-loop/rehearsal-tasks-md" in out and "no longer in" not in out


def test_no_repository_says_what_it_needs_instead_of_making_one(repo: Path) -> None:
    (repo / "tasks.md").write_text("- a task\n")
    code, _, err = invoke("tasks.md", "--rehearse")
    assert code == 1 and "is not a git or jj repository" in err and "`git init`" in err
    assert sorted(p.name for p in repo.iterdir()) == ["tasks.md"]
    code, _, err = invoke("tasks.md", "--rehearse", "--vcs", "none")
    assert code == 2 and "drop --vcs none" in err


def test_a_state_an_older_rehearsal_left_is_not_taken_for_real_work(
        repo: Path, fake_claude: FakeClaude) -> None:
    (repo / "tasks.md").write_text("- a task\n")
    assert invoke("tasks.md", "--vcs", "none")[0] == 0
    path = repo / ".agent-loop" / "state.json"
    path.write_bytes(path.read_bytes().replace(b'"agent": "claude"', b'"agent": "rehearse"'))
    code, _, err = invoke("tasks.md", "--vcs", "none")
    assert code == 1 and "left by a rehearsal" in err and "--reset" in err


def test_in_a_jj_repository_the_rehearsal_has_a_workspace_of_its_own(repo: Path,
                                                                      jj_bin: str) -> None:
    def jj(*args: str) -> str:
        return subprocess.run([jj_bin, "--no-pager", "--color=never", *args], cwd=repo,
                              capture_output=True, text=True, check=True).stdout

    jj("git", "init")
    (repo / "tasks.md").write_text(starter_plan())
    (repo / "mine.txt").write_text("mine\n")
    at = jj("log", "-r", "@", "--no-graph", "-T", "commit_id")
    code, out, err = invoke("tasks.md", "--rehearse")
    assert code == 0, err
    assert "its changes are on jj workspace agent-loop-rehearsal-tasks-md" in out
    assert jj("log", "-r", "@", "--no-graph", "-T", "commit_id") == at  # the user's @ as it was
    assert sorted(p.name for p in repo.iterdir() if not p.name.startswith(".")) == \
        ["mine.txt", "tasks.md"]
    assert "agent-loop-rehearsal-tasks-md" in jj("workspace", "list")
    out = invoke("tasks.md", "--status", "--rehearse")[1]
    assert "its changes are on jj workspace agent-loop-rehearsal-tasks-md" in out
    assert "no longer in" not in out
