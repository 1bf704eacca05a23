"""A task that now holds what were tasks of their own: Kiro sub-tasks at the left margin, read as
tasks until their numbers folded them into their parent (agentloop.plan.numbering). Its record is
made from theirs, so that no finished work runs or is paid for again:

- its history is all of theirs, in file order: every run, cost and token stays in the receipts;
- it is completed when every part of it was completed (or ticked off), with the newest change;
- otherwise it is still to do: it keeps the attempts of the parts not yet done (those of the
  done parts bought finished work, not a failure), and the newest session, so the agent that
  did the other parts goes on. It gets a log name of its own: its parts' logs stay as they are.
"""

from __future__ import annotations

import dataclasses

from agentloop.plan.parse import Task
from agentloop.state.receipts import usd
from agentloop.state.schema import TaskState
from agentloop.state.status import FINISHED
from agentloop.state.status import TaskStatus as S


def carry(parts: list[TaskState], task: Task, fresh: TaskState) -> TaskState:
    """The record of the re-read `task` (whose fresh record is `fresh`), made from the records
    of the `parts` it folds in, found in the saved state, in file order."""
    every = len(parts) == len(task.parts)
    done = every and all(p.status in FINISHED for p in parts)
    changed = [p for p in parts if p.change_id]
    merged = dataclasses.replace(
        fresh, history=[a for p in parts for a in p.history],
        cost_usd=usd(sum(p.cost_usd for p in parts)),
        session_id=next((p.session_id for p in reversed(parts) if p.session_id), None),
        started_at=min((p.started_at for p in parts if p.started_at), default=None))
    if done and any(p.status == S.COMPLETED for p in parts):
        newest = changed[-1] if changed else None
        return dataclasses.replace(
            merged, status=S.COMPLETED, log_name=parts[0].log_name, log=parts[0].log,
            attempts=sum(p.attempts for p in parts),
            change_id=newest.change_id if newest else None,
            commit_id=newest.commit_id if newest else None,
            files=list(dict.fromkeys(f for p in parts for f in p.files)),
            finished_at=max((p.finished_at for p in parts if p.finished_at), default=None))
    if fresh.status == S.SKIPPED or done:
        return dataclasses.replace(merged, status=S.SKIPPED)
    return dataclasses.replace(merged, attempts=sum(p.attempts for p in parts
                                                    if p.status not in FINISHED))
