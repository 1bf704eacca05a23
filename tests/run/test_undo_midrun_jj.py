"""You run `jj undo` in your checkout while a jj run's agent works on a task: the run stops
(the history it lands on moved under it, and jj's operation log is the repository's), and says
the `jj op restore` that puts it back. Restored and run again, the task whose agent had
finished lands without its agent being paid again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.jj.aside import KEPT
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, make_repo, state_of
from tests.support.runner import agent_loop

pytestmark = pytest.mark.usefixtures("jj_bin")

# Task 3's agent writes its file, then you undo jj's last operation in your checkout while it
# still works.
PLAN = """\
## All
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
- task three
  FAKE: write three.txt three
  FAKE: bash [ -e {once} ] || {{ touch {once} && cd {work} && jj undo; }}
  FAKE: sleep 1
- task four
  FAKE: write four.txt four
"""


@pytest.mark.parametrize("repair", [True, False], ids=["restored", "undo-kept"])
def test_a_finished_agents_work_is_kept_when_you_undo_mid_run(
        work: Path, fake_claude: FakeClaude, repair: bool) -> None:
    """Repaired as the stop says (`jj op restore`, which hides the kept change again: its
    commit is where the work comes back from), or your undo kept."""
    make_repo(work, "jj", plan=PLAN.format(work=work, once=work.parent / "undone"),
              message="start")
    first = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = first.stdout + first.stderr
    assert first.returncode != 0, said
    assert "`jj undo` ran while the lane's agent worked" in said, said
    assert len(fake_claude.task_runs()) == 3, said
    restore = re.search(r"`?(jj (?:--ignore-working-copy )?op restore [0-9a-f]+)`?", said)
    assert restore is not None, said
    # As you run it (jj's clock not held still, as the tests' JJ_TIMESTAMP holds it: the
    # snapshot the restore takes first would make a commit that exists already).
    if repair:
        proc.run(["sh", "-c", f"env -u JJ_TIMESTAMP {restore.group(1)}"], cwd=work)
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    said += again.stdout + again.stderr
    assert again.returncode == 0, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 4, said
    assert len(fake_claude.task_runs()) == 4, said  # task 3's agent not paid twice
    assert "the next run lands it without running the task's agent again" in said, said
    assert "its work, kept aside, is back, and the agent is not paid again" in said, said
    assert all((work / f"{n}.txt").exists() for n in ("one", "two", "three", "four")), said
    assert jj(work, "diff", "--name-only", "-r", tasks[2]["change_id"]).split() == \
        ["three.txt"], said
    # The kept change went into the task's: none is left beside the line.
    assert not jj(work, "log", "--no-graph", "-r", f'description(substring:"{KEPT}")', "-T",
                  'change_id ++ "\\n"').split(), said
