"""The page's two buttons, each doing what its command-line twin does: "stop after the running
tasks" leaves the request `--stop-after-running` leaves, "stop now" is a Ctrl+C (SIGINT) to the
run, which stops its agents, saves and exits 130 as it does at the terminal."""

from __future__ import annotations

import os
import signal

from agentloop import app
from agentloop.dashboard.sources import Plan
from agentloop.errors import AgentLoopError
from agentloop.files.pid_file import live_pid


def stop(plan: Plan, now: bool) -> str:
    """Ask the run of `plan` to stop; what was done, in one line (AgentLoopError: no run)."""
    store = plan.store
    if not now:
        state = store.load()
        if state is None:
            raise AgentLoopError("this plan has not run yet")
        return app.ask_to_stop(store.root / state.task_file, store.root)
    pid = live_pid(store.base / "run.pid")
    if pid is None:
        raise AgentLoopError("no run is going on here")
    try:
        os.kill(pid, signal.SIGINT)
    except OSError as exc:
        raise AgentLoopError(f"cannot stop the run (pid {pid}): {exc.strerror}") from None
    return f"stopped the run (pid {pid}) as Ctrl+C does: its agents stop, its state is saved"
