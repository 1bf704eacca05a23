"""The user's checks, run once before the run's first agent, run where the tasks' checks will:
in the run's lane (your last commit, with what `--lane-copy` and `--lane-link` bring), not in
your checkout. A check that passed in your checkout on a file git ignores (a `.env`,
`node_modules`) failed in every task's lane whatever its agent did: each task paid for its
agent, every fix round and every attempt (15 agent runs a task) of a check that could not pass.
Real git, agent-loop as a process, the fake claude."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, state_of
from tests.support.runner import agent_loop

PLAN = "## G\n- [ ] one\n  FAKE: write one.txt one\n- [ ] two\n  FAKE: write two.txt two\n"


def _repo(work: Path) -> None:
    init_repo(work, "git")
    (work / ".gitignore").write_text(".env\n")
    (work / "tasks.md").write_text(PLAN)
    git(work, "add", ".gitignore", "tasks.md")
    git(work, "commit", "-qm", "plan")
    (work / ".env").write_text("TOKEN=1\n")  # yours, ignored: the lane has none of it


def test_a_check_that_needs_an_ignored_file_stops_the_run_before_any_agent(
        work: Path, fake_claude: FakeClaude) -> None:
    _repo(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--check", "test -f .env")
    assert done.returncode == 1, done.stdout + done.stderr
    assert fake_claude.task_runs() == []  # no agent paid for a check that cannot pass
    assert "fails before any task ran" in done.stderr and "--lane-copy" in done.stderr
    assert git(work, "log", "--format=%s").split("\n")[0] == "plan"
    # Brought into the lane, it passes there: the tasks run and land.
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--check", "test -f .env",
                       "--lane-copy", ".env")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 2
    assert (work / "one.txt").exists() and (work / "two.txt").exists()


# Two groups, two lanes at a time: each lane is a fresh copy of your last commit, given the same
# --lane-copy, --lane-link and --lane-setup; the checks run once, in the first lane to come to
# an agent, before any agent of any lane.
TWO = "## G1\n- [ ] one\n  FAKE: write one.txt one\n\n## G2\n- [ ] two\n  FAKE: write two.txt two\n"


def _two_lanes(work: Path, kind: str) -> None:
    init_repo(work, kind)
    (work / ".gitignore").write_text(".env\n.agent-loop/\n")
    (work / "tasks.md").write_text(TWO)
    if kind == "jj":
        jj(work, "commit", "-m", "plan")
    else:
        git(work, "add", ".gitignore", "tasks.md")
        git(work, "commit", "-qm", "plan")
    (work / ".env").write_text("TOKEN=1\n")


def _lanes_left(work: Path, kind: str) -> list[str]:
    if kind == "jj":
        return [line for line in jj(work, "workspace", "list").splitlines()
                if not line.startswith("default:")]
    return git(work, "worktree", "list", "--porcelain").strip().split("\n\n")[1:]


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_parallel_a_check_that_needs_an_ignored_file_stops_the_run_before_any_agent(
        work: Path, fake_claude: FakeClaude, kind: str) -> None:
    _two_lanes(work, kind)
    done = agent_loop(work, "--vcs", kind, "--no-distill", "--parallel", "2",
                      "--check", "test -f .env")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert fake_claude.task_runs() == [], said  # no agent paid, in either lane
    assert "fails before any task ran" in done.stderr and "--lane-copy" in done.stderr, said
    assert done.stdout.count("$ test -f .env") <= 1 and said.count("fails before any") == 1
    assert "Traceback" not in said, said
    assert not (work / "one.txt").exists() and not (work / "two.txt").exists()
    assert _lanes_left(work, kind) == [], said  # every lane closed, none left to sweep
    # Brought into the lanes, it passes there: both groups run and land.
    again = agent_loop(work, "--vcs", kind, "--no-distill", "--parallel", "2",
                       "--check", "test -f .env", "--lane-copy", ".env")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 2
    assert (work / "one.txt").exists() and (work / "two.txt").exists()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_parallel_ctrl_c_while_the_first_check_runs_in_a_lane_leaves_nothing_behind(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, kind: str) -> None:
    _two_lanes(work, kind)
    began = tmp_path / "check.pid"
    check = (f"test -e {began} || {{ echo $$ $PWD > {began}.new; mv {began}.new {began}; "
             "exec sleep 30; }")
    # A session of its own, as a terminal gives its foreground job: Ctrl+C goes to the group.
    first = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                              "--vcs", kind, "--parallel", "2", "--check", check], cwd=work,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, start_new_session=True)
    deadline = time.monotonic() + 60
    while not began.exists():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGINT)
    out, err = first.communicate(timeout=60)
    said = out + err
    assert first.returncode == 130, said
    assert "Traceback" not in said and err.count("Resume with: agent-loop tasks.md") == 1, said
    pid, where = began.read_text().split()
    assert Path(where).parent == (work / ".agent-loop" / "lanes").resolve(), where
    assert not _alive(int(pid)), said  # the check stopped with the run
    assert fake_claude.task_runs() == [], said
    assert [t["status"] for t in state_of(work)["tasks"]] == ["pending", "pending"], said
    # The next run finds nothing a kill would have left, and finishes the plan.
    again = agent_loop(work, "--vcs", kind, "--no-distill", "--parallel", "2", "--check", check)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "an earlier run stopped" not in again.stdout, again.stdout
    assert len(fake_claude.task_runs()) == 2
    assert (work / "one.txt").exists() and (work / "two.txt").exists()
    assert _lanes_left(work, kind) == [], again.stdout
