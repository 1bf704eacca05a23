"""A lane goes on from your branch as it is now before each task, not only when a group starts:
a commit of yours made while the group's task 1 runs (or another plan's landing) is in the lane
before task 2's agent starts, so task 2 builds on it and lands without a conflict (and without a
paid resolution round)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, state_of
from tests.support.runner import agent_loop, half_done_in_the_serial_lane

# What you do in your checkout while task 1's agent works (run by that agent, so it comes at a
# known moment): a new file, committed.
YOURS = {
    # Without the agent's mark in its reflog entry: your commit, not the agent's.
    "git": "echo 'user line' > notes.txt && git add notes.txt && "
           "env -u GIT_REFLOG_ACTION git commit -qm 'user: notes'",
    "jj": "echo 'user line' > notes.txt && jj commit -m 'user: notes' >/dev/null 2>&1",
}


def agent_runs(fake: FakeClaude) -> int:
    return sum(1 for c in fake.calls() if "--output-format" in c["argv"])


@pytest.mark.parametrize("kind", ["git", "jj"])
@pytest.mark.parametrize("parallel", ["1", "2"])
@pytest.mark.parametrize("when", ["while task 1 runs", "after task 1 landed"])
def test_your_commit_before_task_2_is_in_the_lane_when_task_2_starts(
        work: Path, fake_claude: FakeClaude, kind: str, parallel: str, when: str) -> None:
    init_repo(work, kind)
    yours = f"cd {work} && {YOURS[kind]}"
    (work / "tasks.md").write_text(
        "## G\n"
        "- [ ] t1\n"
        "  FAKE: write f1.txt 1\n"
        + (f"  FAKE: bash {yours}\n" if when == "while task 1 runs" else "")
        + "- [ ] t2\n"
        "  FAKE: bash echo 'agent line' >> notes.txt\n")
    # After task 1 landed (its on-task hook): jj's landing of task 1 cannot take the lane's @
    # along onto your change, as a landing after your commit does.
    hook = ("--on-task", f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {yours}; fi') \
        if when == "after task 1 landed" else ()
    if kind == "git":
        git(work, "add", "tasks.md")
        git(work, "commit", "-qm", "plan")
    else:
        jj(work, "commit", "-m", "plan")
    done = agent_loop(work, "--vcs", kind, "--no-distill", "--parallel", parallel, *hook)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"], said
    assert "conflicts with the main line" not in said
    assert agent_runs(fake_claude) == 2, said  # no resolution round paid for
    assert (work / "notes.txt").read_text() == "user line\nagent line\n"
    assert (work / "f1.txt").read_text().strip() == "1"


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_lane_a_killed_run_left_goes_on_from_your_branch_as_it_is_now(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, kind: str) -> None:
    """The lane a killed run left is taken up again by the next run, on the tree it had then:
    your commit meanwhile is brought in before the task that was cut short runs again."""
    init_repo(work, kind)
    (work / "tasks.md").write_text(
        "## G\n"
        "- [ ] t1\n"
        "  FAKE: write f1.txt 1\n"
        "- [ ] t2\n"
        "  FAKE: bash echo 'agent line' >> notes.txt\n")
    if kind == "git":
        git(work, "add", "tasks.md")
        git(work, "commit", "-qm", "plan")
    else:
        jj(work, "commit", "-m", "plan")
    args = ["--vcs", kind, "--no-distill"]
    tool, _ = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "t2", args)
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=30)
    subprocess.run(["sh", "-c", YOURS[kind]], cwd=work, check=True)
    done = agent_loop(work, *args)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"], said
    assert "conflicts with the main line" not in said
    assert (work / "notes.txt").read_text() == "user line\nagent line\n"
