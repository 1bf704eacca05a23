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

from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, state_of
from tests.support.runner import agent_loop

pytestmark = pytest.mark.usefixtures("jj_bin")

TASK_1 = "description(substring:'/ task one')"
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
    jj(work, "git", "init")
    jj(work, "commit", "-m", "start")
    race = RACE.format(work=work, task_1=TASK_1)
    (work / "tasks.md").write_text(PLAN.format(race=race))
    done = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "task 1's change was abandoned in your checkout" in said, said
    assert len(fake_claude.task_runs()) == 3, said
    tasks = state_of(work)["tasks"]
    history = jj(work, "log", "--no-graph", "-r", "::@", "-T", 'change_id ++ "\\n"').split()
    assert tasks[0]["change_id"] not in history, said  # not revived by the merged operation
    assert [t["change_id"] in history for t in tasks[1:]] == [True, True]
    assert jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id") == ""
    assert jj(work, "diff", "--name-only", "-r", tasks[1]["change_id"]).split() == ["two.txt"]
    assert not (work / "one.txt").exists()
    assert (work / "two.txt").exists() and (work / "three.txt").exists()
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 3, again.stdout


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
    jj(work, "git", "init")
    jj(work, "commit", "-m", "start")
    (work / "tasks.md").write_text(WHILE_IT_WORKS.format(work=work, task_1=TASK_1))
    done = agent_loop(work, "--vcs", "jj", *([] if distill else ["--no-distill"]))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "task 1's change was abandoned in your checkout" in said, said
    assert "error" not in said, said
    assert len(fake_claude.task_runs()) == 2, said
    tasks = state_of(work)["tasks"]
    history = jj(work, "log", "--no-graph", "-r", "::@", "-T", 'change_id ++ "\\n"').split()
    assert tasks[0]["change_id"] not in history
    assert tasks[1]["change_id"] in history
    # Nothing of task one's agent is left: not its files, not a change of its own elsewhere;
    # and agent-loop undid no operation (another lane's check would take it for a breach).
    assert jj(work, "diff", "--name-only", "-r", tasks[1]["change_id"]).split() == ["two.txt"]
    assert not (work / "one.txt").exists() and not (work / "one-more.txt").exists()
    ops = jj(work, "op", "log", "--no-graph", "-T", 'description ++ "\\n"')
    assert "revert operation" not in ops, ops
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 2, again.stdout
