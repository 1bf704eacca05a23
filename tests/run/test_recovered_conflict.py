"""A run killed right after a lane committed its task, before that commit landed, while another
group's task that changes the same file landed first: the next run finds the commit (an earlier
run stopped right after committing it) and lands it, which conflicts. That conflict goes to the
group's session, as at the task's own landing, and the task ends `conflicted` with the lines
that say how to go on; it was a bare `agent-loop: error: commit … conflicts with the main line`
on that run and on every run after. Killed inside the conflict round a landing opened, the next
run blamed the agent for the round's unmerged files, and its repair completed the task with no
change (its commit left to the reflog). Real git, agent-loop as a process (a launcher kills it
with SIGKILL after the chosen git command), the fake claude."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.files.shown import typed
from tests.run.test_crash import ended, settle
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, state_of
from tests.support.runner import agent_loop

# Killed with SIGKILL once a git command in group A's lane that names $KILL_AT has run: its
# task's commit, or the first conflict round's cherry-pick (which moved the lane's branch off
# that commit to the main line's tip, git's conflict markers in its files).
LAUNCHER = """
import os, signal
from agentloop.proc import commands

at = os.environ["KILL_AT"]
real_finished = commands._finished
def _finished(child, argv, *rest):
    found = real_finished(child, argv, *rest)
    said = " ".join(argv) + " "
    if at in said and "-1-a " in said:
        os.kill(os.getpid(), signal.SIGKILL)
    return found
commands._finished = _finished

from agentloop.__main__ import main
main()
"""

# Group B's task lands first (A's agent waits); both write shared.txt.
PLAN = ("## A\n- a1\n  FAKE: write shared.txt from-a\n  FAKE: sleep 0.3\n"
        "## B\n- b1\n  FAKE: write shared.txt from-b\n")


@pytest.mark.parametrize("at", [" maintenance.auto=false commit ", " cherry-pick --no-commit "],
                         ids=["after-commit", "in-conflict-round"])
def test_a_kept_commit_that_conflicts_on_the_next_run_goes_to_the_groups_session(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, at: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN)
    out = tmp_path / "killed.out"
    with open(out, "w") as sink:
        tool = subprocess.Popen([sys.executable, "-c", LAUNCHER, "tasks.md", "--vcs", "git",
                                 "--parallel", "2", "--no-distill"], cwd=work,
                                env={**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
                                     "KILL_AT": at},
                                stdin=subprocess.DEVNULL, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)
    assert ended(tool, out) == -9, out.read_text()
    settle(tool.pid, fake_claude, "the kill")
    assert [s for _, s, _ in git_commits(work)] == ["agent-loop: B / b1"], out.read_text()
    paid = len(fake_claude.task_runs())
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    said = again.stdout + again.stderr
    assert "agent-loop: error" not in said, said
    assert "an earlier run stopped right after committing" in said, said
    assert "conflicts with the main line in shared.txt: the group's session resolves it" in said
    assert again.returncode == 4, said  # not completed: conflicted, as said
    assert [t["status"] for t in state_of(work)["tasks"]] == ["conflicted", "completed"], said
    # Only the conflict rounds ran an agent: task a1's own work was not paid again.
    assert all("conflict" in p.lower() for p in fake_claude.prompts()[paid:]), said
    # Its commit stays on its lane's branch: the repair printed takes it on from there.
    lane = next((work / ".agent-loop" / "lanes").iterdir())
    assert git(lane, "show", "HEAD:shared.txt") == "from-a\n"
    printed = f"cd {typed(lane)} && git rebase main"
    assert f"`{printed}`" in said, said
    subprocess.run(["bash", "-c", printed], cwd=work, capture_output=True)  # as pasted
    (lane / "shared.txt").write_text("both\n")  # fixed
    git(lane, "add", "shared.txt")
    subprocess.run(["git", "rebase", "--continue"], cwd=lane, check=True, capture_output=True,
                   env={**os.environ, "GIT_EDITOR": "true"})
    paid = len(fake_claude.task_runs())
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(fake_claude.task_runs()) == paid, done.stdout
    assert [s for _, s, _ in git_commits(work)] == ["agent-loop: B / b1", "agent-loop: A / a1"]
    assert (work / "shared.txt").read_text() == "both\n"
