"""You take task 1 back the documented way (`jj abandon <its change>` in your checkout) while a
jj run's lane works on task 2, which stands on it: jj rebases task 2's change and leaves the
lane's working copy stale under the agent. The run brings it up to date without losing the
agent's files, lands task 2, and goes on; task 1 stays taken back, and no task runs twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.abandoned_jj import run_abandoning, runs_no_task_again
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj

pytestmark = pytest.mark.usefixtures("jj_bin")

# Task 2's agent writes its file, then you abandon task 1 in your checkout while it still works.
PLAN = """\
## All
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
  FAKE: bash cd {work} && jj abandon -r "{task_1}"
- task three
  FAKE: write three.txt three
"""


@pytest.mark.parametrize("distill", [True, False], ids=["distilled", "plain"])
def test_a_task_you_abandon_mid_run_stays_taken_back_and_the_run_goes_on(
        work: Path, fake_claude: FakeClaude, distill: bool) -> None:
    said, tasks, history = run_abandoning(work, PLAN, *([] if distill else ["--no-distill"]))
    assert len(fake_claude.task_runs()) == 3, said  # task 2 not paid twice
    assert [t["change_id"] in history for t in tasks[1:]] == [True, True]
    # Task 2's change is whole and one: the agent's file in it, no divergent copy beside it.
    assert jj(work, "diff", "--name-only", "-r", tasks[1]["change_id"]).split() == ["two.txt"]
    assert not (work / "one.txt").exists()
    assert (work / "two.txt").exists() and (work / "three.txt").exists()
    runs_no_task_again(work, fake_claude, 3)


def test_a_stale_working_copy_is_named_in_one_line_with_its_fix(work: Path) -> None:
    """Where the run cannot bring a working copy up to date itself, the error names which one
    and the command that does (jj's own text names none, and its hint is for a shell in it)."""
    from agentloop.vcs.jj.run import failure

    said = str(failure(work, ("-R", str(work), "log"),
                       "Error: The working copy is stale (not updated since operation 1234).\n"
                       "Hint: Run `jj workspace update-stale` to update it."))
    assert "\n" not in said
    assert f"working copy is stale in {work}" in said
    assert f"`jj -R {work} workspace update-stale`" in said


def test_the_closing_lines_say_the_task_you_took_back(work: Path,
                                                      fake_claude: FakeClaude) -> None:
    # Said during the run, and again where a person reading the last lines looks; counted
    # completed as `--status` counts it, said to be taken back, and no undo line names it.
    said, _, _ = run_abandoning(work, PLAN, "--no-distill")
    closing = said[said.index("agent-loop done: "):]
    assert closing.startswith("agent-loop done: 3 completed (1 of them taken back since);"), said
    assert "look at: task 1's change was abandoned in your checkout: it stays taken back" \
        in closing, said
