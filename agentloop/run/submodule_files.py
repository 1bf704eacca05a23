"""An attempt's writes inside a git submodule (agentloop.vcs.submodules), said as it ends: in a
lane, moved out of it before the lane can lose them; in your checkout, the submodule it left
changed. The task stays completed, with the line as its note: its work is whole and kept, and
no agent run can do what is left (committing inside the submodule is yours to do), so it costs
neither the retry advisor nor another run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agentloop.run.context import Run
from agentloop.run.fixes import Outcome
from agentloop.run.lane_tag import LaneNote
from agentloop.state.schema import TaskState
from agentloop.vcs import submodule_gitdirs, submodules

# Under the plan's own folder in .agent-loop/: task-<n>/<submodule path>/…
KEPT_DIR = "submodule-files"


def before(run: Run) -> None:
    """Your checkout's submodules looked at before the run's first agent there (no process
    when the repository has none); in a lane, its empty submodule folders noted the first time
    (no process either), the only ones `after` may empty."""
    if run.vcs.name == "none":
        return
    if run.vcs.name == "git" and run.cwd == run.project.root:
        submodule_gitdirs.record(run.project.root)  # what `guard` after its agent trusts
    if run.workdir is None:
        submodules.before_task(run.project.root)
    elif run.workdir != run.project.root:
        submodules.lane_seen(run.workdir)


def at_end(run: Run, task: TaskState, outcome: Outcome | None) -> Outcome | None:
    """As an attempt ends, however it ends (failed, stopped, a fix run's writes after the last
    look): what is still in a lane's submodule folders kept now and said, since a failed
    attempt's lane is reset for the next attempt or removed with the run, and a kill then
    would lose it. A successful `outcome` takes the line as its note, as `after` gives it."""
    if run.vcs.name == "none" or run.workdir is None or run.workdir == run.project.root:
        return outcome
    try:
        moved = submodules.sweep(run.workdir, kept_dir(run, task.index),
                                  run.sandbox is not None)
    except OSError:
        if outcome is not None:
            raise
        return None  # on a stop's way out: the stop is what the run says, not this
    if not moved:
        return outcome
    finished = outcome is not None and outcome.succeeded and outcome.failure is None
    line = submodules.swept_line(task.index, moved, {
        m.kept: run.project.shown(m.kept) for m in moved}, run.project.root, finished)
    run.emit(LaneNote(line))
    if outcome is None or not finished:
        return outcome
    return replace(outcome, note=f"{outcome.note}; {line}" if outcome.note else line)


def kept_dir(run: Run, index: int) -> Path:
    """Where task `index`'s writes inside a lane's submodules are kept."""
    return run.project.store.dir / KEPT_DIR / f"task-{index}"


def after(run: Run, task: TaskState, outcome: Outcome) -> Outcome:
    """`outcome` with the line that says what the agent wrote inside a submodule as its note
    (said now too); as it was when it wrote nothing there."""
    if run.vcs.name == "none":
        return outcome
    if run.workdir is not None and run.workdir != run.project.root:
        moved = submodules.sweep(run.workdir, kept_dir(run, task.index),
                                  run.sandbox is not None)
        line = submodules.swept_line(task.index, moved, {
            m.kept: run.project.shown(m.kept) for m in moved}, run.project.root) \
            if moved else None
    else:
        line = submodules.after_task(run.project.root, task.index, run.vcs.name)
    if line is None:
        return outcome
    run.emit(LaneNote(line))
    return replace(outcome, note=f"{outcome.note}; {line}" if outcome.note else line)
