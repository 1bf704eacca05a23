"""A stop (Ctrl+C, SIGTERM) that comes after a serial git run made a task's commit in its lane,
before the task's record names that commit, loses nothing: the record says `landing` with the
commit, and the next run lands it first, its agent not paid again. The lane's record of the
attempt is dropped as the stopped run leaves the lane; before, the task stayed `running`
(`interrupted`), the next run ran it again in the lane that already held its commit, found
nothing to commit, and called it completed while its work was on no commit of your branch.

The stop is sent by the tool to itself at one chosen instant of that span (a launcher wraps the
one function there), so the instant is the same on every run and every machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.test_crash import check, git_history, new_repo, settle, start, subject
from tests.run.test_landing_beside import statuses
from tests.support.fake_agent import FakeClaude

# Runs agent-loop with a stop sent to itself once, at STOP_AT:
# - look: as the lane's first task commit is made, while the look at your checkout that runs
#   beside it (a `git status`) is waited for;
# - beside: as the first landing's thread has started (before it ran any git).
LAUNCHER = """
import os, signal
from agentloop.vcs.git import lane

at, sig = os.environ["STOP_AT"], getattr(signal, os.environ["STOP_SIGNAL"])
fired = []

def once():
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), sig)

if at == "look":
    real = lane.dirty_beside
    def dirty_beside(git):
        answer = real(git)
        def stopped():
            found = answer()
            once()
            return found
        return stopped
    lane.dirty_beside = dirty_beside
elif at == "beside":
    import threading
    real_start = threading.Thread.start
    def start(self):
        real_start(self)
        if self.name == "agent-loop landing":
            once()
    threading.Thread.start = start
from agentloop.__main__ import main
main()
"""


def stopped_run(work: Path, out: Path, at: str, sig: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "STOP_AT": at,
           "STOP_SIGNAL": sig}
    with open(out, "w") as sink:
        return subprocess.Popen([sys.executable, "-c", LAUNCHER, "tasks.md", "--vcs", "git",
                                 "--no-distill"], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)


# After the stop: task 1 is `landing` when its landing had not begun; once its thread had, the
# stop waits for it, and the task is completed.
@pytest.mark.parametrize("at, sig, left", [("look", "SIGINT", "landing"),
                                           ("beside", "SIGTERM", "completed")])
def test_a_stop_between_a_task_commit_and_its_record_leaves_it_to_land_first(
        tmp_path: Path, fake_claude: FakeClaude, at: str, sig: str, left: str) -> None:
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    out = tmp_path / "stopped.out"
    tool = stopped_run(work, out, at, sig)
    assert tool.wait(timeout=120) == 130, out.read_text()[-3000:]
    settle(tool.pid, fake_claude, "the stop", within=work)
    said = out.read_text()
    assert "Traceback" not in said, said
    assert len(fake_claude.task_runs()) == 1
    assert statuses(work) == [left, "pending"], said
    again = tmp_path / "again.out"
    done = start(work, "git", again, None, "--no-distill")
    assert done.wait(timeout=120) == 0, again.read_text()[-3000:]
    assert sum("task 01" in p for p in fake_claude.task_prompts()) == 1, \
        "task 1's agent was paid again: " + again.read_text()[-3000:]
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems) + "\n" + said + again.read_text()
    ours = [d for _, d, _ in git_history(work) if d.startswith("agent-loop")]
    assert ours == [subject(1, 2), subject(2, 2)]
