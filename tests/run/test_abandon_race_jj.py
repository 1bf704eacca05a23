"""You take a task back with `jj abandon` while agent-loop's own jj command runs at the same
moment (its landing, its next task's begin). jj merges the two concurrent operations, and
agent-loop's, made on the view before your abandon, may bring the change back (a rewrite of
it keeps a new commit) or leave a change of its own in two copies (divergent). Made
deterministic here: task two's agent abandons task one in your checkout, then rewrites it as
of the operation before, as agent-loop's concurrent command would (`--at-op`). The change
stays taken back, the run says so and goes on, nothing is left divergent, no task runs twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.abandoned_jj import run_abandoning, runs_no_task_again
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj

pytestmark = pytest.mark.usefixtures("jj_bin")

# The operation before your abandon; your abandon; a rewrite of the change made on that older
# view (jj merges it with the abandon: the rewritten commit is visible again).
RACE = ('cd {work} && op=$(jj op log -n 1 --no-graph -T id) && jj abandon -r "{task_1}" && '
        'jj --at-op "$op" --ignore-working-copy metaedit --force-rewrite -r "{task_1}"')

PLAN = """\
## All
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
  FAKE: bash {race}
- task three
  FAKE: write three.txt three
"""


def test_a_task_you_abandon_while_agent_loops_jj_runs_stays_abandoned(
        work: Path, fake_claude: FakeClaude) -> None:
    # Not revived by the merged operation (run_abandoning).
    said, tasks, history = run_abandoning(work, PLAN.format(race=RACE), "--no-distill")
    assert len(fake_claude.task_runs()) == 3, said
    assert [t["change_id"] in history for t in tasks[1:]] == [True, True]
    assert jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id") == ""
    assert jj(work, "diff", "--name-only", "-r", tasks[1]["change_id"]).split() == ["two.txt"]
    assert not (work / "one.txt").exists()
    assert (work / "two.txt").exists() and (work / "three.txt").exists()
    runs_no_task_again(work, fake_claude, 3)


# You abandon task one's change in your checkout while its own agent still works; the agent
# writes once more after that.
WHILE_IT_WORKS = """\
## All
- task one
  FAKE: write one.txt one
  FAKE: bash cd {work} && jj abandon -r "{task_1}"
  FAKE: write one-more.txt more
- task two
  FAKE: write two.txt two
"""


@pytest.mark.parametrize("distill", [True, False], ids=["distilled", "plain"])
def test_a_task_you_abandon_while_its_agent_works_stays_taken_back(
        work: Path, fake_claude: FakeClaude, distill: bool) -> None:
    said, tasks, history = run_abandoning(work, WHILE_IT_WORKS,
                                          *([] if distill else ["--no-distill"]))
    assert "error" not in said, said
    assert len(fake_claude.task_runs()) == 2, said
    assert tasks[1]["change_id"] in history
    # Nothing of task one's agent is left: not its files, not a change of its own elsewhere;
    # and agent-loop undid no operation (another lane's check would take it for a breach).
    assert jj(work, "diff", "--name-only", "-r", tasks[1]["change_id"]).split() == ["two.txt"]
    assert not (work / "one.txt").exists() and not (work / "one-more.txt").exists()
    ops = jj(work, "op", "log", "--no-graph", "-T", 'description ++ "\\n"')
    assert "revert operation" not in ops, ops
    runs_no_task_again(work, fake_claude, 2)
