"""The `tick-boxes` setting: a task that landed gets its box ticked in the plan (`- [ ]` becomes
`- [x]`), as ralph-style loops keep their progress in the plan itself (agentloop.plan.tick
writes it, carefully: the plan is the user's file).

The tick is agent-loop's own edit, so it must not read as the user's: when the plan held what
the run last read, the hashes the run keeps of it (the controller's, and the state's
`task_file_hash`) move to the ticked file. An edit of the user's made before the tick keeps the
old hashes, so it is still news to the controller and to the next run.

The tick is never committed: the plan is never part of a task's change (agentloop.vcs
.plan_files), and the user commits their plan when they choose to.
"""

from __future__ import annotations

import os

from agentloop.run import plan_kept
from agentloop.run.context import Run
from agentloop.run.lane_tag import LaneNote
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S

# The tasks whose box a run could not tick (the plan gone or unreadable for a moment, held by a
# hard link, ...), a log name a line: the next run with the setting ticks them (owed).
OWED = "boxes-owed"


def owed(run: Run) -> list[str]:
    """The log names of the tasks whose box a run before could not tick, in the file's order.
    The file stays until `settle`: a stop before those boxes are ticked and the state saved
    leaves them owed still."""
    try:
        return (run.project.store.dir / OWED).read_text(encoding="utf-8").split()
    except OSError:
        return []


def settle(run: Run, taken: list[str]) -> None:
    """What is owed after the boxes `owed` read (`taken`) were ticked and the state saved:
    the names a tick since then owed again (`_owe` adds them after the ones read), written
    over the file at once (a stop mid-write leaves the old list, owed still); none, no file."""
    path = run.project.store.dir / OWED
    try:
        names = path.read_text(encoding="utf-8").split()
        still = names[len(taken):] if names[:len(taken)] == taken else names
        if not still:
            path.unlink()
            return
        scratch = path.with_name(OWED + ".tmp")
        scratch.write_text("".join(f"{name}\n" for name in still), encoding="utf-8")
        os.replace(scratch, path)
    except OSError:
        pass   # owed still: the next run ticks what is ticked already, which changes nothing


def _owe(run: Run, task: TaskState) -> None:
    try:
        with (run.project.store.dir / OWED).open("a", encoding="utf-8") as out:
            out.write(f"{task.log_name}\n")
    except OSError:
        pass   # the box stays unticked, as said


def landed(run: Run, task: TaskState) -> bool:
    """Tick `task`'s box in the plan if the setting asks for it and the task is done; True
    when the state's hash of the plan moved (the caller, the ledger, saves it)."""
    # A fleet job's plan is a CI checkout's, and its state's hash names the plan it ran; a
    # rehearsal leaves the user's files as they are (its project still names their plan).
    if (not run.options.tick_boxes or task.status != S.COMPLETED or run.job is not None
            or run.options.rehearse):
        return False
    # Imported here: the plan's markdown reader (marko) is for a run that ticks boxes, or
    # whose plan changed since its state was saved.
    from agentloop.plan import tick

    with run.shared.lock:   # one writer of the plan and its hashes, whichever lane landed
        # A plan renamed while the run worked: the box is ticked where the plan is now.
        # Under its heading as the plan reads now: renamed in place, its tasks are still its.
        group = run.shared.plan_groups.get(task.log_name, task.group)
        done = tick.tick(plan_kept.current(run), group, task.task, task.line)
        if done.note:
            _owe(run, task)
            run.emit(LaneNote(f"tick-boxes: task {task.index}'s box was not ticked: {done.note}"
                              "; the next run with the setting ticks it"))
            return False
        if not done.after:
            return False
        if run.shared.plan_hash == done.before:
            run.shared.plan_hash = done.after
            # The ticked plan is what the run has read: renamed now, it is found by its bytes.
            plan_kept.keep(run, done.written, done.file)
        if run.state.task_file_hash != done.before:
            return False
        run.state.task_file_hash = done.after
        return True
