"""The landing a serial run's git lane leaves running beside the next task's agent
(agentloop.vcs.git.lane.LaneGit.finish_beside), from the finish that starts it to the record
that says it landed: noted in the run as the task's record says `landing` (so a stop at any
moment leaves it for the next run to land, its agent not paid again), settled as soon as it has
landed, waited for before anything of the next attempt lands or is judged, and, when your
checkout refused it as itself, landed the longer way after the next attempt's finished work
was set aside. The lane (agentloop.run.lane) calls it; it changes no record itself.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from agentloop.proc.signals import deferred, shielded
from agentloop.run import conflicts
from agentloop.run.conflicts import settling
from agentloop.run.context import Run
from agentloop.run.decisions import Completed, Uncounted
from agentloop.run.fixes import Outcome
from agentloop.run.handover import drop, hand
from agentloop.run.history_check import done_ids, landing_branch
from agentloop.run.lane_tag import LaneNote
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S
from agentloop.vcs import history
from agentloop.vcs.protocol import Change, LandsBeside, Rooted


def beside_finish(run: Run, outcome: Outcome
                  ) -> Callable[[Change, str], tuple[Change, bool]] | None:
    """The lane's finish that leaves a fast-forward landing running beside the next task's
    agent: a serial run's git lane only, for a task plainly completed, with no on-task hook
    (it would run before the commit is on the branch), no reviewer and no checks: the next
    task's attempt is set aside when this landing goes the long way after all (your commit
    came meanwhile), and its reviewer and fix runs would be paid again; None: finish as
    ever."""
    options = run.options
    vcs = run.vcs
    if not isinstance(vcs, LandsBeside) or options.parallel != 1 or options.on_task \
            or run.job is not None or options.review or options.check or options.git_hooks \
            or outcome.status != S.COMPLETED or run.shared.landing is not None:
        return None
    return vcs.finish_beside


def note_landing(run: Run, task: TaskState, step: Completed) -> None:
    """The run's note of the landing that runs beside what the lane does next."""
    run.shared.landing = (task, step)
    run.shared.meanwhile = lambda: landed_meanwhile(run)


def land_beside(run: Run, fallback: bool = True, before: Callable[[], None] | None = None
                ) -> None:
    """The landing left running beside this lane's next steps (a serial run's git lane:
    agentloop.vcs.git.lane.LaneGit.finish_beside), waited for and its task's record settled:
    completed once its commit landed as itself. Refused by the checkout (your edit on one of
    its files, the branch moved), it lands now as a landing that ran in turn would have (by
    waiting on your edits, held, conflicted), after `before` set aside what the lane did
    meanwhile; without `fallback` (the run stops) it stays `landing`, for the next run."""
    pending = run.shared.landing
    if pending is None:
        return
    task, step = pending
    done = lands_beside(run).settle_beside()
    if done is None and not fallback:
        run.shared.landing = None
        return
    run.shared.landing = None
    if done is not None:
        _marked(run, task, done)
    if done is None:  # refused as itself: the longer way, as a landing in turn takes it
        # Why git refused is not known here: a commit or an edit of yours on one of its
        # files, or only a moment's lock another git held (an editor's git panel).
        run.emit(LaneNote(f"task {run.shared.number(task)}'s commit "
                          f"{(task.change_id or '')[:12]} did not "
                          "land as itself (git refused the fast-forward: another git held your "
                          "checkout's lock, or your checkout changed meanwhile): it lands now"
                          + (", the next task's work set aside until it has" if before
                             else "")))
        if before is not None:
            before()
        with settling(run, task, step.record):
            done = conflicts.land_kept(run, task)
    hand(run, task, dataclasses.replace(step, done=done, status=S.COMPLETED, helper_cost=0.0,
                                        said=done.change_id != step.done.change_id))
    done_ids(run, task)


def landed_meanwhile(run: Run) -> None:
    """While the next task's agent runs: the landing left beside it, once it has landed,
    settled now (its task completed, its box ticked, `--status` and the dashboard told) and
    not once that agent ends. A refusal waits for the agent's end, where its fallback sets
    the agent's work aside (land_beside's `before`). Ctrl+C is held back until the record is
    saved: the agent's wait it cuts short then stops as ever."""
    if run.shared.landing is None or not lands_beside(run).landed_beside():
        return
    with deferred():
        land_beside(run)


def _marked(run: Run, task: TaskState, done: Change) -> None:
    """The history's mark (agentloop.vcs.history) moved on to `done`, landed as itself on the
    history the last check found whole, with `task` among the finished: saved with its
    record, so `--status` after the run asks the VCS nothing (the check after the task ran
    while it was still landing)."""
    at = history.where(run.vcs.name, run.vcs.root) if isinstance(run.vcs, Rooted) else None
    if at != done.change_id or run.state.history_mark is None:
        return
    before = run.shared.lost_before or ()
    ids = [c for c in done_ids(run, task) if c not in before] + [done.change_id]
    run.state.history_mark = history.mark(at, ids, landing_branch(run))


def after_landing(run: Run, task: TaskState, outcome: Outcome) -> bool:
    """The task before's landing, left running beside this attempt's agent, settled before
    anything of this attempt lands or is judged: nothing lands out of order. True when the
    checkout refused it as itself: this attempt was set aside (not counted; a finished
    agent's work kept, for the task's next attempt to bring back without paying the agent
    again) while that task landed the longer way."""
    if run.shared.landing is None:
        return False
    landing = run.shared.landing[0].index
    if not outcome.succeeded:
        # Blocked, fatal or failed: no work to keep, and its answer stands once the task
        # before has landed (set aside, its agent would be run and paid again).
        land_beside(run)
        return False
    set_aside: list[bool] = []

    def aside() -> None:
        set_aside.append(True)  # first: a stop inside must not set it aside twice
        run.shared.set_aside[task.index] = landing
        number = outcome.attempt.number
        hand(run, task, Uncounted(number, O.INTERRUPTED, S.INTERRUPTED,
                                  "set aside while the task before landed"))
        drop(run, task, outcome.change, number, finished=True)
    try:
        land_beside(run, before=aside)
    except BaseException:
        # A stop while the task before still lands: this attempt's finished work is kept as
        # when set aside, for the next run to bring back without paying its agent again (left
        # running, that run's recovery dropped it).
        if not set_aside:
            with shielded():
                aside()
        raise
    return bool(set_aside)


def lands_beside(run: Run) -> LandsBeside:
    """The run's VCS where only a git lane's can be: a landing runs beside it (beside_finish
    started one), or it made the stopped task's commit (agentloop.run.lane._left_landing)."""
    assert isinstance(run.vcs, LandsBeside)
    return run.vcs
