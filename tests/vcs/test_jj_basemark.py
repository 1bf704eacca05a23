"""A jj run killed again and again leaves no pile of empty, undescribed changes in the line of
history: each run notes the base it took below its first task, and the next run drops it when
nothing went into it (agentloop.vcs.jj.basemark)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, make_repo

BLANK = "::@ & ~@ & mutable() & empty() & description(exact:'')"


def killed_in_the_agent(work: Path) -> None:
    (work / "started.txt").unlink(missing_ok=True)
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "jj",
                              "--workplace", "checkout", "--no-distill"], cwd=work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 60
    while not (work / "started.txt").exists():
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def test_kills_in_a_row_leave_no_blank_changes(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "jj")
    (work / "tasks.md").write_text("- the task\n  FAKE: write a.txt a\n"
                                   "  FAKE: write started.txt now\n  FAKE: pause 30\n")
    for _ in range(3):
        killed_in_the_agent(work)
    blank = jj(work, "log", "--no-graph", "-r", BLANK, "-T", 'change_id ++ "\\n"').split()
    # The last killed run's base is still there (its next run drops it); none before it.
    assert len(blank) <= 1, jj(work, "log", "-r", "all()")
