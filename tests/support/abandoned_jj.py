"""A jj run in which you take task one back (`jj abandon` in your checkout) while it goes on:
the set-up, the run and what every such test checks of it (tests/run/test_abandon_*_jj.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, make_repo, state_of
from tests.support.runner import agent_loop

TASK_1 = "description(substring:'/ task one')"


def run_abandoning(work: Path, plan: str, *args: str) -> tuple[str, list[dict], list[str]]:
    """`plan` (its {work} and {task_1} filled in) run by jj in a new repository at `work`, which
    ends well and says task 1 was abandoned: what it said, the tasks' records and the change
    ids of the line (`::@`), task 1's not among them."""
    make_repo(work, "jj", plan=plan.format(work=work, task_1=TASK_1), message="start")
    done = agent_loop(work, "--vcs", "jj", *args)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "task 1's change was abandoned in your checkout" in said, said
    tasks = state_of(work)["tasks"]
    history = jj(work, "log", "--no-graph", "-r", "::@", "-T", 'change_id ++ "\\n"').split()
    assert tasks[0]["change_id"] not in history, said  # still taken back: not re-landed
    return said, tasks, history


def runs_no_task_again(work: Path, fake_claude: FakeClaude, runs: int) -> None:
    """The next run ends well and pays no agent: the agents were run `runs` times in all."""
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == runs, again.stdout
