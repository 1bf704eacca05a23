"""The page's two buttons, each doing what its command-line twin does: "stop after the running
tasks" leaves the request `--stop-after-running` leaves, "stop now" is a Ctrl+C (SIGINT) to the
run, which stops its agents, saves and exits 130 as it does at the terminal."""

from __future__ import annotations

import os
import signal

from agentloop import app
from agentloop.dashboard.sources import Plan
from agentloop.errors import AgentLoopError
from agentloop.state.runlock import run_of_plan


def stop(plan: Plan, now: bool) -> str:
    """Ask the run of `plan` to stop; what was done, in one line (AgentLoopError: no run)."""
    store = plan.store
    if not now:
        state = store.load()
        if state is None:
            raise AgentLoopError("this plan has not run yet")
        return app.ask_to_stop(store.root / state.task_file, store.root)
    state = store.load()
    # Only the run that works on this plan: another plan's (this plan's tab, or a page that
    # missed this plan's end), or a process that took a killed run's pid, is not asked.
    pid = run_of_plan(store.base, store.dir,
                      state.task_file if state is not None else "this plan")
    try:
        os.kill(pid, signal.SIGINT)
    except OSError as exc:
        raise AgentLoopError(f"cannot stop the run (pid {pid}): {exc.strerror}") from None
    return f"stopped the run (pid {pid}) as Ctrl+C does: its agents stop, its state is saved"
