"""A merge, cherry-pick or revert of yours in progress in your checkout (a `git pull` or `git
merge` that stopped on a conflict while an agent worked) holds a finished task's landing: your
branch does not move under it. Moved, the checkout could not follow (git refuses to touch an
index with a conflict in it), and the commit that finishes your merge, made from that index,
took the task's files back out of your branch without a word, the run having said "completed".
Real git, agent-loop as a process, the fake claude."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop


def _repo_with_a_conflict_to_come(work: Path, go: Path) -> str:
    """Your repository: on main, a branch `feat` whose f.txt conflicts with main's; task 1's
    agent writes one.txt, then waits for `go`. Main's tip."""
    init_repo(work, "git")
    (work / "f.txt").write_text("base\n")
    (work / "tasks.md").write_text(
        "## G\n- [ ] one\n  FAKE: write one.txt one\n"
        f"  FAKE: bash n=0; while [ ! -e {go} ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1));"
        " done\n"
        "- [ ] two\n  FAKE: write two.txt two\n")
    git(work, "add", "f.txt", "tasks.md")
    git(work, "commit", "-qm", "init")
    git(work, "checkout", "-qb", "feat")
    (work / "f.txt").write_text("feat\n")
    git(work, "commit", "-qam", "feat")
    git(work, "checkout", "-q", "main")
    (work / "f.txt").write_text("main\n")
    git(work, "commit", "-qam", "main")
    return git(work, "rev-parse", "main").strip()


def _run_with(work: Path, go: Path, yours: list[list[str]]) -> subprocess.CompletedProcess[str]:
    """agent-loop started; once task 1's agent works, your git commands `yours` run in your
    checkout (the last one stops on a conflict), then the agent goes on."""
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                             "--no-distill", "--lane-wait", "1s"], cwd=work, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    lane = work / ".agent-loop" / "lanes"
    deadline = time.monotonic() + 60
    while not list(lane.glob("*/one.txt")) and time.monotonic() < deadline:
        time.sleep(0.02)
    for args in yours:
        subprocess.run(["git", *args], cwd=work, capture_output=True)
    go.touch()
    out, err = tool.communicate(timeout=120)
    return subprocess.CompletedProcess(tool.args, tool.returncode, out, err)


def test_your_merge_stopped_on_a_conflict_holds_the_landing_until_you_finish_it(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    go = tmp_path / "go"
    mine = _repo_with_a_conflict_to_come(work, go)
    done = _run_with(work, go, [["merge", "feat"]])
    assert (work / ".git" / "MERGE_HEAD").exists()  # your merge stopped on its conflict
    assert done.returncode == 4, done.stdout + done.stderr
    held = [line for line in done.stdout.splitlines() if "held:" in line]
    assert held and "a merge" in held[0] and "git merge --continue" in held[0], done.stdout
    # Your branch did not move under your merge: nothing of the task is there to lose.
    assert git(work, "rev-parse", "main").strip() == mine
    assert state_of(work)["tasks"][0]["status"] == "held"
    # You finish your merge; the next run lands both tasks, paying no agent again (task 2's
    # agent worked beside the landing, its work kept aside).
    (work / "f.txt").write_text("both\n")
    git(work, "add", "f.txt")
    git(work, "commit", "-qm", "my merge")
    calls = len(fake_claude.task_runs())
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == calls  # both agents' work was kept
    assert git(work, "ls-tree", "--name-only", "main").split() == [
        "README.md", "f.txt", "one.txt", "tasks.md", "two.txt"]
    assert (work / "one.txt").read_text() == "one\n" and (work / "f.txt").read_text() == "both\n"
    assert git(work, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_conflict_your_stash_pop_left_holds_the_landing_until_you_resolve_it(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # No merge under way (no MERGE_HEAD): the conflict is only in your index. git refuses to
    # bring the task's files into such an index; the branch is moved back as it was, and the
    # landing waits as for a merge, until you resolve the conflict.
    go = tmp_path / "go"
    _repo_with_a_conflict_to_come(work, go)
    (work / "f.txt").write_text("stashed\n")
    git(work, "stash", "-q")
    (work / "f.txt").write_text("committed\n")
    git(work, "commit", "-qam", "mine")
    mine = git(work, "rev-parse", "main").strip()
    done = _run_with(work, go, [["stash", "pop"]])
    assert "UU f.txt" in git(work, "status", "--porcelain")  # your pop stopped on a conflict
    assert done.returncode == 4, done.stdout + done.stderr
    held = [line for line in done.stdout.splitlines() if "held:" in line]
    assert held and "`git status`" in held[0], done.stdout
    assert git(work, "rev-parse", "main").strip() == mine
    # You resolve it; the next run lands both tasks, and your checkout has them.
    (work / "f.txt").write_text("both\n")
    git(work, "add", "f.txt")
    calls = len(fake_claude.task_runs())
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == calls
    git(work, "commit", "-qm", "my resolution")
    assert git(work, "ls-tree", "--name-only", "main").split() == [
        "README.md", "f.txt", "one.txt", "tasks.md", "two.txt"]
    assert (work / "f.txt").read_text() == "both\n"
