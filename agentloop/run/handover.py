"""Where a lane hands what happened (agentloop.run.decisions) to the controller: over the
controller's queue from a lane's own thread, waiting for the answer; at once, by the same
function, when the lane runs in the controller's thread (--parallel 1). Without a controller
(the fleet's replay of one conflict at --integrate) the ledger applies it in the caller's
thread, which is then the only one.
"""

from __future__ import annotations

from typing import Any

from agentloop.run import ledger
from agentloop.run.context import Run
from agentloop.run.decisions import Dropped, RunBegun, Step
from agentloop.state.schema import Attempt, TaskState
from agentloop.vcs.protocol import Change, Keeps, NotKept


def hand(run: Run, task: TaskState, step: Step) -> Any:
    """Hand `step` to the controller; its answer once the records changed and were saved."""
    take = run.shared.take
    if take is None:
        return ledger.apply(run, task, step)
    return take(run, task, step)


def begin(run: Run, task: TaskState, step: RunBegun) -> Attempt:
    """An agent run's record, made and saved by the controller before the agent starts."""
    record = hand(run, task, step)
    assert isinstance(record, Attempt)
    return record


def drop(run: Run, task: TaskState, change: Change, number: int | None = None,
         finished: bool = False) -> None:
    """Abandon the attempt's change and every edit in it (the lane's VCS, in the lane's
    working copy; kept aside first); the records forget it and the run says where its edits
    are kept (the controller). A change the VCS kept for the task's next begin instead (a
    killed run's, jj: agentloop.vcs.jj.backend.JjVcs.keeps) is still in history, and the
    records go on naming it until that begin takes it up. `finished`: the attempt's agent had
    finished, so the records keep where its work went (Attempt.work_kept)."""
    kept = run.vcs.abandon(change)
    if isinstance(run.vcs, Keeps) and run.vcs.keeps(change.change_id):
        return
    # A keep that failed is said, never recorded as the finished agent's kept work.
    hand(run, task, Dropped(change.change_id, number, kept or "",
                            finished and not isinstance(kept, NotKept)))
