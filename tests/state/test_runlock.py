"""The run lock as an agent meets it: a run started inside a lane of a run that works."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, jj_changes, tasks_of
from tests.support.runner import agent_loop


@pytest.mark.parametrize("vcs", ["git", "jj"])
def test_an_agent_running_agent_loop_in_its_lane_is_refused(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, vcs: str) -> None:
    """An agent that runs agent-loop on the plan in its own lane (to try the project, or told
    to by a task) started a second run there: the lane is a folder of its own, so no lock kept
    it out. That run paid an agent for task two outside this run's count and its --budget
    (the closing line said $0.0200 of $0.0300 spent), then this run paid for task two again."""
    init_repo(work, vcs)
    nested = tmp_path / "nested.out"
    again = shlex.join([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", vcs,
                        "--no-distill", "--budget", "5"])
    (work / "tasks.md").write_text(
        "## A\n"
        "- [ ] one\n"
        "  FAKE: write one.txt one\n"
        f"  FAKE: bash {again} > {nested} 2>&1; echo \"exit $?\" >> {nested}\n"
        "- [ ] two\n"
        "  FAKE: write two.txt two\n")
    if vcs == "git":  # the plan is in the lane as in your checkout
        git(work, "add", "tasks.md")
        git(work, "commit", "-qm", "the plan")
    else:
        jj(work, "commit", "-m", "the plan")
    done = agent_loop(work, "--vcs", vcs, "--no-distill", "--budget", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    said = nested.read_text()
    assert said.splitlines()[-1] == "exit 1", said
    assert "is a lane of the agent-loop run in" in said and str(work) in said, said
    # One agent run per task, all of them counted.
    assert len(fake_claude.task_runs()) == 2
    assert "agent-loop done: 2 completed; cost $0.0200;" in done.stdout, done.stdout
    assert [t["status"] for t in tasks_of(work)] == ["completed"] * 2
    changes = git_commits(work) if vcs == "git" else jj_changes(work)
    assert [files for _, _, files in changes][-2:] == [["one.txt"], ["two.txt"]]


def test_status_in_a_lane_names_the_run_it_belongs_to(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`agent-loop tasks.md --status` in a lane (a person who went there, as a conflict's line
    says `cd <lane>`, or an agent in its own) said `no run yet` and every task pending, while
    the run it belongs to had one done and worked on the next: now one line names that run's
    folder, where --status shows it, and exits 1."""
    init_repo(work, "git")
    nested = tmp_path / "nested.out"
    status = shlex.join([sys.executable, "-m", "agentloop", "tasks.md", "--status"])
    (work / "tasks.md").write_text(
        "## A\n- [ ] one\n  FAKE: write one.txt one\n"
        f"- [ ] two\n  FAKE: bash {status} > {nested} 2>&1; echo \"exit $?\" >> {nested}\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "the plan")
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    said = nested.read_text().splitlines()
    assert said[-1] == "exit 1" and len(said) == 2, said
    assert said[0].startswith("agent-loop: error: ") and "no run yet" not in said[0], said
    assert f"is a lane of agent-loop's run in {work}" in said[0], said
    assert f"`agent-loop {work / 'tasks.md'} --status`" in said[0], said
