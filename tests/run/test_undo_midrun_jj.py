"""You run `jj undo` in your checkout while a jj run's agent works on a task: the run stops
(the history it lands on moved under it, and jj's operation log is the repository's), and says
the `jj op restore` that puts it back. Restored and run again, the task whose agent had
finished lands without its agent being paid again."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
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


# agent-loop with one of jj's keeping functions wrapped (module, name): the instant its call
# that keeps a finished agent's work (the lane's keep_finished, or keep_aside's copy inside it,
# the task's change not yet emptied) returns, agent-loop is killed (kill -9), before the run
# records the stop.
KILLED_AFTER_KEEP = """
import importlib, os, signal, sys
marker, module, name = sys.argv[1:4]
del sys.argv[1:4]
owner = importlib.import_module(module)
real = getattr(owner, name)

def kept_then_killed(*args, **kwargs):
    line = real(*args, **kwargs)
    if name == "keep_finished" or kwargs.get("named"):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return line

setattr(owner, name, kept_then_killed)
import agentloop.__main__ as entry
entry.main()
"""


@pytest.mark.parametrize("spot", ["agentloop.vcs.jj.lane:keep_finished",
                                  "agentloop.vcs.jj.aside:keep_aside"],
                         ids=["kept", "copied"])
def test_a_kill_after_the_work_is_kept_does_not_pay_the_agent_again(
        work: Path, fake_claude: FakeClaude, spot: str) -> None:
    """Killed between keeping task 3's finished work aside and recording the stop: the next
    run finds the kept change by the records (the attempt left open, its change named in the
    kept change's description) and brings it back, once, into task 3 alone. Killed with the
    copy made and the task's change not yet emptied: one of the two copies comes back."""
    # The plan committed: your `jj undo` takes an untracked one off the disk with the snapshot
    # it undoes (a stop puts it back; a kill cannot).
    make_repo(work, "jj", files={"README.md": "hello\n", "tasks.md": PLAN.format(
        work=work, once=work.parent / "undone")}, message="start")
    marker = work.parent / "killed"
    first = subprocess.run([sys.executable, "-c", KILLED_AFTER_KEEP, str(marker),
                            *spot.split(":"), "tasks.md", "--vcs", "jj", "--no-distill"],
                           cwd=work, capture_output=True, text=True, timeout=180,
                           stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    said = first.stdout + first.stderr
    assert marker.exists(), said
    assert first.returncode == -signal.SIGKILL, said
    assert len(fake_claude.task_runs()) == 3, said
    assert jj(work, "log", "--no-graph", "-r", f'description(substring:"{KEPT}")', "-T",
              'change_id ++ "\\n"').split(), said  # the kept change, beside the line
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    said += again.stdout + again.stderr
    assert again.returncode == 0, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 4, said
    assert len(fake_claude.task_runs()) == 4, said  # task 3's agent not paid twice
    assert "the next run lands it" not in again.stdout + again.stderr, said
    assert said.count("its work, kept aside, is back, and the agent is not paid again") == 1, \
        said
    assert all((work / f"{n}.txt").exists() for n in ("one", "two", "three", "four")), said
    assert jj(work, "diff", "--name-only", "-r", tasks[2]["change_id"]).split() == \
        ["three.txt"], said
    assert jj(work, "diff", "--name-only", "-r", tasks[3]["change_id"]).split() == \
        ["four.txt"], said
    assert not jj(work, "log", "--no-graph", "-r", f'description(substring:"{KEPT}")', "-T",
                  'change_id ++ "\\n"').split(), said
    # A third run has nothing left to bring back, into any task.
    third = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert third.returncode == 0, third.stdout + third.stderr
    assert "kept aside" not in third.stdout + third.stderr, third.stdout + third.stderr
    assert len(fake_claude.task_runs()) == 4
