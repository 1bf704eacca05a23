"""streamed.py's stop of several agents at once: what it says it waits for."""

from __future__ import annotations

import os
import signal
import subprocess

from agentloop.proc import streamed


def test_a_stop_counts_the_agents_it_reached_still_running() -> None:
    # A --parallel stop's "waiting for N agents" counted an agent that had ended but that its
    # lane had not yet taken off the list of runs: it is not waited for, so not counted.
    still = subprocess.Popen(["sleep", "60"], start_new_session=True)
    ended = subprocess.Popen(["true"], start_new_session=True)
    os.waitid(os.P_PID, ended.pid, os.WEXITED | os.WNOWAIT)  # ended, its lane yet to look
    said: list[int] = []
    streamed.stop_groups([still, ended], grace=5, told=said.append)
    assert said == [1]
    assert (still.returncode, ended.returncode) == (-signal.SIGINT, 0)
