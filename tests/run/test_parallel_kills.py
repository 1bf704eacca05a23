"""SIGKILL of a parallel run at random moments (inside a lane's agent, while a task lands, while a
worktree is made or removed), then plain re-runs: every task exactly once on the main line,
nothing lost, nothing left behind that blocks. In the `-commits` campaigns every agent commits in
its lane (`git add -A && git commit`, `jj commit`) and works on: its commits are folded into its
task, and (git) no commit that nothing but a reflog holds has work the main line lacks.

A few kills by default; a long campaign on demand:
    AGENT_LOOP_PARALLEL_KILLS=60 AGENT_LOOP_CRASH_SEED=7 pytest tests/run/test_parallel_kills.py -s
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.test_agent_commits import work_lost
from tests.run.test_parallel import plan
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, jj_changes, state_of
from tests.support.runner import agent_loop

KILLS = int(os.environ.get("AGENT_LOOP_PARALLEL_KILLS", "3"))
SEED = int(os.environ.get("AGENT_LOOP_CRASH_SEED", "25"))
GROUPS, TASKS = 3, 2


# What each task's agent does after writing its file: waits (a kill may come), or also commits.
EXTRA = {"git": "\n  FAKE: sleep 0.3", "jj": "\n  FAKE: sleep 0.3",
         "git-commits": "\n  FAKE: bash git add -A && git commit -qm wip\n  FAKE: pause 0.3",
         "jj-commits": "\n  FAKE: bash jj commit -m wip\n  FAKE: pause 0.3"}


def start(work: Path, kind: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", kind,
                             "--parallel", str(GROUPS), "--no-distill"], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("campaign", ["git", "jj", "git-commits", "jj-commits"])
def test_random_kills_lose_nothing_and_duplicate_nothing(tmp_path: Path, jj_bin: str,
                                                         fake_claude: FakeClaude,
                                                         campaign: str) -> None:
    kind = campaign.removesuffix("-commits")
    rng = random.Random(SEED)
    kills, rounds = 0, 0
    while kills < KILLS:
        rounds += 1
        work = tmp_path / f"round{rounds}"
        work.mkdir()
        (work / "README.md").write_text("hello\n")
        init_repo(work, kind)
        (work / "tasks.md").write_text(plan(GROUPS, TASKS, extra=EXTRA[campaign]))
        for _ in range(3):  # a few kills of one run, each at a random moment
            child = start(work, kind)
            time.sleep(rng.uniform(0.2, 3.0))
            if child.poll() is None:
                child.send_signal(signal.SIGKILL)
                kills += 1
            child.wait()
        done = agent_loop(work, "--vcs", kind, "--parallel", str(GROUPS), "--no-distill")
        assert done.returncode == 0, done.stdout + done.stderr
        check(work) if kind == "git" else check_jj(work)
        if campaign == "git-commits":  # each task's commit holds its agent's, folded
            for sha, _, _ in git_commits(work):
                assert "\n- wip" in git(work, "show", "-s", "--format=%B", sha)
        if campaign == "jj-commits":  # no change of the agent's is left on the main line
            described = jj(work, "log", "--no-graph", "-r", "::@", "-T",
                           'description.first_line() ++ "\\n"').split("\n")
            assert "wip" not in described


def check(work: Path) -> None:
    subjects = [s for _, s, _ in git_commits(work)]
    wanted = [f"agent-loop: Group {g} / task {g}.{t}" for g in range(1, GROUPS + 1)
              for t in range(1, TASKS + 1)]
    assert sorted(subjects) == sorted(wanted)  # each task exactly once on the main line
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert sorted(t["change_id"] for t in state["tasks"]) == sorted(
        sha for sha, _, _ in git_commits(work))
    for g in range(1, GROUPS + 1):
        for t in range(1, TASKS + 1):
            assert (work / f"g{g}t{t}.txt").read_text() == f"{g}.{t}\n"
    assert git(work, "worktree", "list").count("\n") == 1
    assert "agent-loop/" not in git(work, "branch", "--list")
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert work_lost(work) == []  # what only a reflog holds is on the main line too


def check_jj(work: Path) -> None:
    changes = jj_changes(work)
    wanted = [f"agent-loop: Group {g} / task {g}.{t}" for g in range(1, GROUPS + 1)
              for t in range(1, TASKS + 1)]
    assert sorted(d for _, d, _ in changes) == sorted(wanted)  # each task exactly once
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert sorted(t["change_id"] for t in state["tasks"]) == sorted(c for c, _, _ in changes)
    for g in range(1, GROUPS + 1):
        for t in range(1, TASKS + 1):
            assert (work / f"g{g}t{t}.txt").read_text() == f"{g}.{t}\n"
    assert jj(work, "workspace", "list", "-T", 'name ++ "\\n"').split() == ["default"]
