"""The branch's history checked as a run goes: every finished task's change must still be where
it was. A change you rebased or amended (its trailers kept) is followed by its record; one lost
before the run began is said once and stops nothing; one lost while the run works (an agent that
reset or switched the branch, or abandoned a change) stops the run before the next task is built
on that. The history's mark, which lets `--status` skip asking the VCS, is kept here too."""

from __future__ import annotations

import dataclasses
from typing import Iterator

from agentloop.errors import RunStopped
from agentloop.files.shown import typed_path
from agentloop.run.context import Run
from agentloop.run.decisions import Moved
from agentloop.run.handover import hand
from agentloop.run.lane_tag import LaneNote, lane, set_lane
from agentloop.run.rebuilt import moved_on
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S
from agentloop.vcs import history
from agentloop.vcs.protocol import OnMainLine, Rooted, SeesCommits, TakesBack

DONE = (S.COMPLETED, S.UNAPPROVED)


def _finished(run: Run) -> Iterator[str]:
    """Every finished task's change id, read off the records as it is asked for, but those
    gone from the history before the run began (said then, and asked after no more: the
    history would be read again after every task for them)."""
    before = run.shared.lost_before or ()
    return (t.change_id for t in run.state.tasks
            if t.status in DONE and t.change_id and t.change_id not in before)


def done_ids(run: Run, settled: TaskState) -> list[str]:
    """The finished tasks' change ids, for the history's mark, with `settled` (the task a lane
    has just settled) as its record says now. Only the first call of a run reads every record:
    the mark's input then follows task by task (run.shared.done). Should it ever miss a change,
    the mark is only wrong the safe way: `--status` then asks the VCS, as without a mark."""
    shared = run.shared
    with shared.lock:  # lanes settle tasks at the same time
        if shared.done is None:
            shared.done = {t.index: t.change_id for t in run.state.tasks
                           if t.status in DONE and t.change_id}
        elif settled.status in DONE and settled.change_id:
            shared.done[settled.index] = settled.change_id
        else:
            shared.done.pop(settled.index, None)
        return list(shared.done.values())


def check_history(run: Run, settled: TaskState) -> None:
    """Every finished task's change must still be where it was: an agent that reset the branch,
    switched it or abandoned a change stops the run before the next task is built on that."""
    done = done_ids(run, settled)
    # Before the check, which may outlast where it was.
    at = history.where(run.vcs.name, run.vcs.root) if isinstance(run.vcs, Rooted) else None
    # Read off the records themselves, not the mark's copy; a generator: the backends read it
    # only when the history moved behind their back.
    lost = run.vcs.missing(_finished(run))
    _recommitted(run)
    if lost:
        lost = _followed(run, lost)
        done = done_ids(run, settled)  # read afresh should a record have moved
    if lost and isinstance(run.vcs, TakesBack):
        lost -= _taken_back(run, run.vcs.taken_back(lost))
    if not lost and at is not None:
        # Over the changes the history holds: one lost before the run is not among them.
        before = run.shared.lost_before or ()
        ids = [c for c in done if c not in before]
        own = ids + [settled.change_id] if settled.change_id else ids  # its landing may run on
        run.state.history_mark = history.mark(at, ids, landing_branch(run)) \
            if _whole(run, at, own) else None
    if lost:
        named = ", ".join(f"task {t.index} ({(t.change_id or '')[:12]})"
                          for t in run.state.tasks if t.change_id in lost)
        raise RunStopped(f"the change of {named} is no longer in the history this run builds "
                         f"on; {run.vcs.lost_hint}")


def landing_branch(run: Run) -> str | None:
    """git: the branch the tasks land on, which the history's mark names: `--status` from a
    checkout you switched away since looks there (agentloop.vcs.history.elsewhere)."""
    return run.vcs.main_line()[1] if isinstance(run.vcs, OnMainLine) else None


def _whole(run: Run, at: str, own: list[str]) -> bool:
    """Whether the history standing `at` holds nothing `--status` would speak of, which its
    mark tells it: the check above asks only whether the changes are there, not whether a
    commit of yours reverted one. git: known without a process while it grew by the run's own
    commits (`own`) from where it was last known so; else (your commit came) one read, as
    `--status` would make. jj: as the check found it."""
    if run.vcs.name != "git" or not isinstance(run.vcs, Rooted):
        return True
    shared = run.shared
    base = history.grown_from(run.vcs.root, at, (shared.whole, shared.unsound), own)
    if base in shared.whole:
        shared.whole.add(at)
        return True
    if base is not None:
        shared.unsound.add(at)  # what a look found there is there still: no read, no mark
        return False
    from agentloop.state.whereabouts import NOTHING, whereabouts

    state = dataclasses.replace(run.state, history_mark=None)
    if whereabouts(run.vcs.root, run.state.task_file, state) != NOTHING:
        shared.unsound.add(at)
        return False
    shared.whole.add(at)
    return True


def _followed(run: Run, lost: set[str]) -> set[str]:
    """Of `lost` (finished tasks' changes gone from the history), those not found again under
    another id by their trailers: one the user rebased or amended is followed by its record,
    which a note says."""
    if not isinstance(run.vcs, Rooted):
        return lost
    # A git lane's own HEAD still holds the commits as they landed: the branch they landed on
    # is where a rebase moved them.
    where, rev = run.vcs.main_line() if isinstance(run.vcs, OnMainLine) \
        else (run.vcs.root, "HEAD")
    moved = moved_on(run.state, run.vcs.name, where, lost, rev)
    for task, change, commit in moved:
        hand(run, task, Moved(change, commit))  # the controller writes the records
        run.emit(LaneNote(f"task {task.index}'s change moved (a rebase kept its trailers): "
                          f"it is {change[:12]} now, and its record follows it"))
    if not moved:
        return lost
    with run.shared.lock:
        run.shared.done = None  # records moved: read afresh
    return run.vcs.missing(_finished(run))


def _taken_back(run: Run, yours: set[str]) -> set[str]:
    """Changes you abandoned in your checkout while the run went (`jj abandon`, the documented
    way to take one task back): they stay taken back, as one abandoned before the run does
    (said once, asked after no more), and the run goes on."""
    if not yours:
        return yours
    with run.shared.lock:
        # Two lanes' checks may find the same one at once: said by the first only.
        new = yours - (run.shared.lost_before or set())
        run.shared.lost_before = (run.shared.lost_before or set()) | yours
        run.shared.done = None  # read afresh, without them
    name = typed_path(run.project.shown(run.project.task_file))  # as typed where you stand
    for task in run.state.tasks:
        if task.change_id in new:
            line = (f"task {task.index}'s change was abandoned in your checkout: it stays taken "
                    f"back; `agent-loop {name} --task {task.index} --again` does it once more")
            with run.shared.lock:
                run.shared.taken_back[task.index] = line
            run.emit(LaneNote(line))
    return yours


def _recommitted(run: Run) -> None:
    """jj: a finished task's change you rewrote (`jj describe`, `jj squash --into`) keeps its
    id under a new commit, which the history's last look found (vcs.history.missing): its
    record follows that commit, which the dashboard shows the diff of."""
    commits = run.vcs.commits if isinstance(run.vcs, SeesCommits) else {}
    if not commits:  # git's, or nothing rewritten: no walk over every record after each task
        return
    for task in run.state.tasks:
        now = commits.get(task.change_id or "")
        if task.status in DONE and now and task.commit_id and now != task.commit_id:
            hand(run, task, Moved(task.change_id or "", now))


def lost_before(run: Run) -> None:
    """Once a run, before its first task: the finished tasks' changes the history it builds on
    no longer holds (you reset or abandoned them since; `--status` says so too). Said here,
    they stay done and stop nothing; only a change lost while the run works stops it."""
    shared = run.shared
    # Lanes start at once; the first one looks, before any task of theirs. Not under the
    # records' lock, which the controller takes to save the record of a change that moved.
    with shared.looking:
        if shared.lost_before is not None:
            return
        shared.lost_before = set()
        ids = list(_finished(run))
        if isinstance(run.vcs, Rooted) and (
                not ids or history.unmoved(run.vcs.name, run.vcs.root,
                                           run.state.history_mark, ids)):
            at = history.where(run.vcs.name, run.vcs.root)
            shared.whole |= {at} if at else set()  # as the mark says
        lost = _followed(run, run.vcs.missing(ids)) if ids else set()
        if ids:
            _recommitted(run)
        shared.lost_before = lost
    here = lane()
    try:
        for task in run.state.tasks:
            if task.change_id in lost:
                # Said by whichever lane looked first: under the task's own group, not that
                # lane's.
                if here:
                    set_lane(task.group)
                from agentloop.state.whereabouts import lost_words  # only for a lost one

                name = typed_path(run.project.shown(run.project.task_file))  # as you type it
                run.emit(LaneNote(f"{lost_words(run.vcs.name, task)}: it stays done; "
                                  f"`agent-loop {name} --task {task.index} --again` does it "
                                  "once more"))
    finally:
        if here:
            set_lane(here)
