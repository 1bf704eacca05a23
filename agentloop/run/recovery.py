"""What an earlier run left open of a task, settled before a lane runs it (agentloop.run.lane):
a task kept on its lane or cut short in its landing lands now; one committed by a run killed
before it saved that is recorded done; an attempt a kill (or a stop) left is recorded as not
counting, its finished work brought back from where it was kept, so its agent is not paid again.
As in the lane, every step goes to the controller (agentloop.run.handover); no record changes
here."""

from __future__ import annotations

from agentloop.run import conflicts
from agentloop.run.agent_run import ended_unrecorded
from agentloop.run.attempt import finished_well
from agentloop.run.conflicts import settling
from agentloop.run.context import Run
from agentloop.run.decisions import Completed, Dropped, RunEnded, Uncounted
from agentloop.run.handover import drop, hand
from agentloop.run.lane_tag import LaneNote
from agentloop.run.rebuilt import trailers_of
from agentloop.run.selection import commit_message
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import Attempt, TaskState
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.choose import IntegrationConflict
from agentloop.vcs.protocol import Change, KeepsFinished, KeepsKilledAttempt, KilledAttempt, Settles


def _landing_record(task: TaskState) -> Attempt:
    """The run whose work a task left `landing` holds (a reviewer's may come after it)."""
    return next((a for a in reversed(task.history) if a.outcome == S.LANDING),
                task.history[-1])


def recover(run: Run, task: TaskState) -> bool:
    """Settle what an earlier run left of this task; True when that finished it."""
    if task.status in (S.CONFLICTED, S.HELD, S.LANDING):
        _land_left(run, task)
        return True
    if task.status not in (S.RUNNING, S.INTERRUPTED):
        return False
    if _committed_unsaved(run, task):
        return True
    last = task.history[-1] if task.history else None
    finished = _left_attempt_taken_up(run, task, last)
    # A task left running or interrupted has a change holding a partial attempt; drop it
    # so history keeps only attempts that counted (jj: kept aside, and where, when its agent
    # had finished, as git's prepare did above).
    if task.change_id is not None:
        drop(run, task, Change(change_id=task.change_id, commit_id=task.commit_id or ""),
             last.number if finished and last is not None else None, finished)
    return False


def _land_left(run: Run, task: TaskState) -> None:
    """A task kept on its lane by an earlier run (or its landing cut short): landed now."""
    record = _landing_record(task) if task.status == S.LANDING else task.history[-1]
    # No task heading comes before this landing's lines: this one names the task.
    run.emit(LaneNote(f"task {run.shared.number(task)} ({task.status} by an earlier run) lands "
                      f"now: {task.summary}"))
    with settling(run, task, record):
        landed = conflicts.land_kept(run, task)
    hand(run, task, Completed(record, landed, S.COMPLETED))


def _committed_unsaved(run: Run, task: TaskState) -> bool:
    """Whether the earlier run committed this task and was killed before saving it as done:
    recorded as done now."""
    # Left running by a kill, or interrupted with its change still named (an error ended the
    # run between the agent and the record: ledger.left_open): it may have been committed.
    probe = task.status == S.RUNNING or task.change_id is not None
    done = _recovered(run, task) if probe else None
    if done is None and probe and task.history:
        done = _sealed(run, task)
    if done is not None and task.history:
        hand(run, task, Completed(task.history[-1], done, S.COMPLETED))
        return True
    return False


def _recovered(run: Run, task: TaskState) -> Change | None:
    """git: the commit an earlier run made for this task in its lane, landed now (None: none
    found). One that meets what landed since in a conflict goes to the group's session, as
    at the task's own landing (conflicts.resolve; the task `conflicted` if unresolved): it
    ended the run as a bare error, on that run and every one after it."""
    if not task.history:
        return run.vcs.recovered()
    last = task.history[-1]
    with settling(run, task, last):
        try:
            return run.vcs.recovered()
        except IntegrationConflict as conflict:  # another lane's work came first
            return conflicts.resolve(run, task, Change(change_id=conflict.commit),
                                     task.session_id, conflict, last)


def _left_attempt_taken_up(run: Run, task: TaskState, last: Attempt | None) -> bool:
    """The attempt a kill (or an older agent-loop's stop) left, recorded as not counting, its
    finished work brought back where it was kept; whether its developer had finished."""
    if task.status == S.RUNNING and last is not None and last.outcome == S.RUNNING:
        ended = ended_unrecorded(run, task, last)
        if ended is not None:
            # Killed as its agent ended well, before the record said so: recorded now (it was
            # paid), its work kept and brought back below as for a kill in its checks.
            hand(run, task, RunEnded(last, ended))
            if last.role == "reviewer" and ended.ok:
                from agentloop.run import review  # a run that asks for reviews only

                review.read_back(run, task, last, ended)  # its verdict stands (review.judge)
        # Killed inside the agent (or after it): like Ctrl+C, that attempt does not count.
        hand(run, task, Uncounted(last.number, O.INTERRUPTED, S.INTERRUPTED,
                                  task.error or "the run was killed"))
        # The developer's run, not the last record: a kill in the reviewer's run (or a fix
        # run) leaves the developer's finished, paid work the task's.
        finished = finished_well(task, last.number) is not None
        # git: rolled back in prepare (the checkout's, or the lane's, where the killed run
        # worked), kept for the task its begin named
        if finished:
            _killed_kept_back(run, task, last.number, task.change_id)
        return finished
    if task.status == S.INTERRUPTED and last is not None and last.outcome == O.INTERRUPTED \
            and _ended_well_unkept(task, last.number):
        # An older agent-loop's Ctrl+C (or an error: ledger.left_open) after the agent ended
        # well, before its commit: its run's end interrupted the task with its work where it
        # stood, which this version keeps aside as the stop comes (_stopped_unlanded). The
        # records say as much as a kill's: taken up as a kill's is, not paid again.
        _killed_kept_back(run, task, last.number)
        return True
    return False


def _killed_kept_back(run: Run, task: TaskState, number: int, change_id: str | None = None
                      ) -> None:
    """Where a killed run kept attempt `number`'s work, recorded (KeepsKilledAttempt); jj:
    where a stop kept the finished work of the attempt's change `change_id`, the kill coming
    before the stop was recorded (KeepsFinished)."""
    kept = run.vcs.killed_attempt_kept(commit_message(task, run.state.title)) \
        if isinstance(run.vcs, KeepsKilledAttempt) else None
    if kept is None and change_id and isinstance(run.vcs, KeepsFinished):
        line = run.vcs.finished_kept(change_id)
        # Said as it comes back (attempt._brought_back), in one line: the kept line's "the next
        # run lands it" was the killed run's to say.
        kept = KilledAttempt(line, said=True) if line is not None else None
    if kept is not None:
        hand(run, task, Dropped("", number, kept.line, True, said=kept.said))


def _ended_well_unkept(task: TaskState, number: int) -> bool:
    """Whether attempt `number`'s developer ended well and nothing of it was kept aside (the
    work is still where its run left it: the state of an older version's stop)."""
    return finished_well(task, number) is not None and \
        not any(a.work_kept for a in task.history if a.number == number)


def _sealed(run: Run, task: TaskState) -> Change | None:
    """jj: the task's change, when an earlier run sealed it (landing it in a lane now, as finish
    would have) or landed it; None when there is no such change, or no such backend."""
    vcs = run.vcs
    if not isinstance(vcs, Settles) or not task.change_id:
        return None
    last = task.history[-1]
    with settling(run, task, last):
        try:
            found: Change | None = vcs.settled(task.change_id, trailers_of(run, task))
        except IntegrationConflict as conflict:  # another lane's work came first
            found = conflicts.resolve(run, task, Change(change_id=conflict.commit),
                                      task.session_id, conflict, last)
    return found
