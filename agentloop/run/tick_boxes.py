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

from agentloop.run import plan_kept
from agentloop.run.context import Run
from agentloop.run.lane_tag import LaneNote
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S

# The tasks whose box a run could not tick (the plan gone or unreadable for a moment, held by a
# hard link, ...), a log name a line: the next run with the setting ticks them (owed).
OWED = "boxes-owed"


def owed(run: Run) -> set[str]:
    """The log names of the tasks whose box a run before could not tick, taken (a tick that
    fails again owes it again)."""
    path = run.project.store.dir / OWED
    try:
        names = set(path.read_text(encoding="utf-8").split())
        path.unlink()
    except OSError:
        return set()
    return names


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
        done = tick.tick(plan_kept.current(run), task.group, task.task, task.line)
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
