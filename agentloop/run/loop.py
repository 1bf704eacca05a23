"""A run over the plan's pending tasks, driven by one controller (agentloop.run.controller)
whatever --parallel K is; the summary at the end, however it ended."""

from __future__ import annotations

import dataclasses
import os
from functools import partial

from agentloop.errors import AgentLoopError, Interrupted
from agentloop.files.shown import typed_path
from agentloop.plan import parse
from agentloop.plan.depends import waves
from agentloop.plan.fences import said_at_start
from agentloop.proc.signals import shielded
from agentloop.run import ledger, plan_kept
from agentloop.run.context import Run
from agentloop.run.controller import Controller
from agentloop.run.events import RunFinished, RunStarted
from agentloop.run.lane_tag import LaneNote
from agentloop.run.names_now import Names, names_now
from agentloop.run.rebuilt import asks_history, readded
from agentloop.run.selection import runnable
from agentloop.run.summary import count_stalls, counted, ended_with, summarize
from agentloop.run.workplace import in_lanes, no_lane_note
from agentloop.state.reconcile import Reconciled, reconcile
from agentloop.state.schema import TaskState, now
from agentloop.state.status import FINISHED
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.lanes import lanes_dir


def _tick_reworded(run: Run) -> None:
    """--tick-boxes: the box of a task kept done as reworded (its words changed while it ran,
    so its tick found its old words gone) ticked now, under the words it reads as, and the box
    a run before could not tick (tick_boxes.owed); the plan stays the progress record it is
    with the setting."""
    if not run.options.tick_boxes:
        return
    from agentloop.run import tick_boxes

    taken = tick_boxes.owed(run)
    owed = set(taken)
    moved = [tick_boxes.landed(run, task) for task in run.state.tasks
             if task.status == S.COMPLETED and (task.done_as is not None
                                                or task.log_name in owed)]
    if any(moved):
        ledger.save(run)
    if taken:   # forgotten only once ticked and saved: a stop before keeps them owed
        tick_boxes.settle(run, taken)


def _renamed_in(run: Run, exc: BaseException) -> None:
    """The plan renamed while the run worked (`mv plan.md new.md`, seen now should the run
    not have looked since): said on the error that stops the run, whose advice (`Resume
    with: agent-loop ...`) names the file there is, not the one gone."""
    now = plan_kept.current(run)
    if now != run.project.task_file and not os.path.lexists(run.project.task_file):
        try:
            exc.renamed = (str(run.project.task_file), str(now))  # type: ignore[attr-defined]
        except AttributeError:
            pass   # an exception that takes no attributes: the advice stays as typed


def _numbered_in(exc: BaseException | None, names: Names) -> None:
    """The plan's tasks as numbered now, said on the error that stops the run: its advice
    (`Continue with: agent-loop ... --task 2-4`) runs the same tasks as the plan numbers them
    after an edit taken in while the run worked (a task put above them)."""
    if exc is not None and names.numbers is not None:
        try:
            exc.renumbered = names.command  # type: ignore[attr-defined]
        except AttributeError:
            pass   # an exception that takes no attributes: the advice stays as typed


def _moved_on(run: Run, notes: list[str]) -> None:
    """The plan renamed again, or back, after the run said where it went: saved under the
    name it has now (the closing lines and `--status` name it), and the line that said where
    it went says where it is, so that no line names a file that is gone."""
    said = run.shared.plan_moved
    now = plan_kept.current(run)
    if said is None or now == said:
        return
    run.shared.plan_moved = now
    ledger.plan_renamed(run, run.project.store.relative(now))
    old, went, new = (run.project.shown(p) for p in (run.project.task_file, said, now))
    line = (f"{old} was renamed while this run worked, and back, so no new task started "
            f"since; `agent-loop {typed_path(old)}` goes on with this plan"
            if now == run.project.task_file
            else f"{old} was renamed {new} while this run worked (the same text), so it is not "
            f"put back: no new task starts; `agent-loop {typed_path(new)}` goes on with this "
            "plan, its finished tasks done")
    notes[:] = [line if n.startswith(f"{old} was renamed {went} ") else n for n in notes]


def run_tasks(run: Run, only: tuple[int, ...] = (), notes: tuple[str, ...] = ()) -> RunFinished:
    """Run every unfinished task in order (or only the tasks `only`); return the summary."""
    started = run.clock.monotonic()
    run.state.vcs = run.vcs.name
    pending = _in_order(run, only)
    run = _announced(run, pending, only, notes)
    stopped, begun = None, list[TaskState]()
    controller = Controller(run, pending, begun)
    _tick_reworded(run)
    failed: BaseException | None = None  # the last lane's removal's, raised last
    ending: BaseException | None = None  # what stops the run, its advice named as below
    try:
        controller.drive()
    except BaseException as exc:
        stopped = ("interrupted" if isinstance(exc, (Interrupted, KeyboardInterrupt))
                   else str(exc) or type(exc).__name__)
        _renamed_in(run, exc)
        ending = exc
        raise
    finally:
        try:
            with shielded():
                stopped, closing = _wound_up(run, stopped, controller.news.notes)
                # The closing lines name the tasks as the plan the records take last reads.
                names = names_now(run)
                closing = _left_unfinished(run, begun, names) + closing
                failed = lane_gone(run)
                if failed is not None:
                    stopped = stopped or str(failed) or type(failed).__name__
                    _renamed_in(run, failed)
                for raised in (ending, failed):
                    _numbered_in(raised, names)
            news = controller.news
            said = tuple(names.headed(note, news.named[note]) if note in news.named else note
                         for note in news.notes)
            summary = _summary(run, started, stopped, said + closing, pending, names)
            # Last: the records take the edited plan's numbering, which the summary's do not.
            taken = _plan_taken(run)
            if taken:
                summary = dataclasses.replace(summary, notes=summary.notes + taken)
            if names.counts is not None and _recorded(run):
                # The records took the edited plan, a task it added that the history holds
                # marked done in the same save: the count is theirs, as --status's right after.
                summary = dataclasses.replace(summary, counts=counted(run.state.tasks))
            # The code the run exits with, for a --status --follow elsewhere to end with.
            summary = dataclasses.replace(summary, exit_code=ended_with(summary,
                                                                        ending or failed))
            run.emit(summary)
        finally:
            # The plan's copy, for a run that streamed no command to write it beside
            # (plan_kept.keep); its file, held open while the run worked (and by _wound_up,
            # which puts the plan back): let go whatever failed.
            plan_kept.copied(run)
            plan_kept.release(run)
    if failed is not None:  # as it was raised when the lane went before the run's end
        raise failed
    return summary


def lane_gone(run: Run) -> BaseException | None:
    """The run's last lane, whose removal began beside the run's end (agentloop.run.scheduler's
    close), waited for: what it kept said, as the removal said it before; what it raised
    returned. Before the closing lines, whatever ended the run."""
    wait, run.shared.leaving = run.shared.leaving, None
    if wait is None:
        return None
    try:
        notes = wait()
    except BaseException as exc:  # noqa: BLE001 - the run's end says it, then raises it
        return exc
    for note in notes:
        run.emit(LaneNote(note))
    return None


def _in_order(run: Run, only: tuple[int, ...]) -> list[TaskState]:
    """The tasks this run does, in the order it does them: the ones asked for (--task), or
    every one still to do, a group that waits for others after them. The run's tally learns
    which were planned."""
    if only:
        pending = [run.state.tasks[i - 1] for i in only]
    else:
        pending = [t for t in run.state.tasks
                   if runnable(t, run.options.max_attempts, run.options.include_optional)]
    if run.state.depends:
        order = [g for wave in waves([t.group for t in pending], run.state.depends)
                 for g in wave]
        pending.sort(key=lambda t: order.index(t.group))
    run.tally.planned = tuple(t.index for t in pending)
    return pending


def _announced(run: Run, pending: list[TaskState], only: tuple[int, ...],
               notes: tuple[str, ...]) -> Run:
    """Say the run starts (how many tasks, how many done before, in how many lanes, where)
    and save its record; the run as it goes on, in one lane when it does only the tasks asked
    for."""
    done = sum(1 for t in run.state.tasks
               if t.status in FINISHED and t.index not in run.tally.planned)
    lanes = run.options.parallel if not only else 1
    if lanes != run.options.parallel:
        run = dataclasses.replace(run, options=dataclasses.replace(run.options, parallel=lanes))
    missing = no_lane_note(run)
    notes = notes + ((missing,) if missing else ())
    alone = in_lanes(run)
    run.emit(RunStarted(len(pending), len(run.state.tasks), run.vcs.name, notes,
                        run.agent.name, done, lanes, alone,
                        str(lanes_dir(run.project.root)) if alone or lanes > 1 else "",
                        said_at_start(run.state.warnings)))
    ledger.save(run)
    return run


def _wound_up(run: Run, stopped: str | None,
              notes: list[str]) -> tuple[str | None, tuple[str, ...]]:
    """However the run ended: the working copy left in no task's change, no task left
    `running`, the plan back if the last agent took it away. Why the run stopped (a failed
    close is one reason), and the line that says the plan came back, if it did; lines about
    the plan's name go to `notes`."""
    try:
        run.vcs.close()
    except AgentLoopError as exc:
        stopped = stopped or str(exc)
    _moved_on(run, notes)
    # A task an error left `running` between its agent and its record is interrupted:
    # no total says `running` once the run is over.
    ledger.left_open(run, stopped or "the run stopped")
    # The last task's agent may have taken the plan away (`jj undo`): back it comes.
    restored = plan_kept.restore(run)
    if restored is not None and restored.name:
        ledger.plan_renamed(run, restored.name)
        if not restored.moved:
            plan_kept.said_back(run, notes)
    return stopped, ((restored.note,) if restored else ())


def _left_unfinished(run: Run, begun: list[TaskState], names: Names) -> tuple[str, ...]:
    """A line for each task the run leaves for the next: stalled, conflicted, held, or with
    its commit on the way to your branch; each named as the plan reads now (`names`)."""
    tasks = run.state.tasks
    return count_stalls(run, begun, names) + tuple(
        f"{names(t.index)} is conflicted: it {names.within(t.error or '', t.index)}"
        for t in tasks if t.status == S.CONFLICTED) + tuple(
        f"{names(t.index)} is {names.within(t.error or '', t.index)}" for t in tasks
        if t.status == S.HELD) + tuple(
        f"{names(t.index)} is landing: its commit {(t.change_id or '')[:12]} was on its way to "
        "your branch when the run stopped; the next run lands it first (or finds it there)"
        for t in tasks if t.status == S.LANDING)


def _plan_taken(run: Run) -> tuple[str, ...]:
    """The plan as the controller last read it, edited while the run worked, recorded as the
    plan's state (ledger.plan_read), as the next run would take it in at its start: the
    records of the tasks it removed kept aside, and a task it added that the history holds
    done marked done. An edit made after that read (during the last task) stays news for
    `--status` and the next run. Its lines; a fleet job's state keeps the plan it ran. The
    closing lines name the tasks as this plan reads (agentloop.run.names_now, which reads it
    so under the same conditions)."""
    data = run.shared.plan_bytes
    if run.job is not None or data is None or \
            parse.file_hash(data) == run.state.task_file_hash:
        return ()
    with shielded():
        try:
            parsed = parse.from_bytes(plan_kept.current(run), data)
            changes = reconcile(run.state.tasks, parsed)
            notes = []
            if changes.dropped:
                kept = run.project.store.keep_removed(list(changes.dropped), now())
                if any(record.history for record in changes.dropped):
                    notes.append(f"the records of removed and reworded tasks are kept in "
                                 f"{run.project.shown(kept)}; their cost still counts")
            # The added tasks the history holds are marked done in the save that records the
            # plan as read: saved before, a kill while git reads the history left them to run
            # again, the next run's start no longer seeing them as added.
            notes += ledger.plan_read(run, parsed, changes, partial(_found_done, run, changes))
        except AgentLoopError:
            # The records stay as they were: the next run reads the plan anew (and numbers
            # the tasks as the closing lines did).
            return ()
    return tuple(notes)


def _recorded(run: Run) -> bool:
    """Whether the plan's state records the plan the controller last read (_plan_taken did)."""
    data = run.shared.plan_bytes
    return run.job is None and data is not None and \
        parse.file_hash(data) == run.state.task_file_hash


def _found_done(run: Run, changes: Reconciled) -> list[str]:
    """Of the tasks the plan's edit added, those the history holds done, marked so; a line for
    each (agentloop.run.rebuilt.readded). None when the history cannot be read."""
    if not changes.added or not asks_history(run.options) or run.vcs.name == "none":
        return []
    try:
        return readded(run.project, run.state, changes.added, run.vcs.name)
    except AgentLoopError:
        return []


def _summary(run: Run, started: float, stopped: str | None, notes: tuple[str, ...],
             pending: list[TaskState], names: Names) -> RunFinished:
    """The run's closing record, of the tasks it planned and did not drop."""
    planned = [t.index for t in pending if t.index not in run.tally.dropped]
    summary = summarize(run, started, stopped, notes, planned, names)
    # Whether any agent ran for this plan (the runs its totals count): the closing line
    # says nothing of cost only when none did.
    return dataclasses.replace(summary, agents_ran=bool(run.state.retired) or any(
        t.history for t in run.state.tasks))
