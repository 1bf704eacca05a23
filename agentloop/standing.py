"""Where a plan stands (`--status`), and where every plan of a repository stands (`--status`
without a plan): read from the state file, told apart from the history only when that moved.

Its own module, apart from the core operations (agentloop.app), because a user types it while
a plan runs and waits for every module it loads: this one loads the state's records and nothing
of the run, the plan's reader or the process layer (tests/cli/test_startup.py holds the list).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentloop.errors import StateError
from agentloop.files.pid_file import live_pid
from agentloop.state.project import Project, load_plan, open_project, rehearsal_of
from agentloop.state.schema import State
from agentloop.state.status import as_left_by_a_dead_run


@dataclass(frozen=True)
class StatusView:
    """--status: the recorded state, and a note about it (no run yet, a changed file)."""

    project: Project
    state: State
    note: str | None
    lost: tuple[int, ...] = ()    # finished tasks whose change is gone from the history
    moved: tuple[tuple[int, str], ...] = ()     # (task, its change now): rebased, trailers kept
    reverted: tuple[tuple[int, str], ...] = ()  # (task, the commit that reverts it)


def status(tasks_md: Path, cwd: Path, rehearsal: bool = False) -> StatusView:
    """Where each task stands (in the last rehearsal, with `rehearsal`); reads the state without
    the run lock (writes are atomic)."""
    from agentloop.state.whereabouts import NOTHING, whereabouts

    project = open_project(tasks_md, cwd)
    if rehearsal:
        project = rehearsal_of(project)
    try:
        state, saved, changes = load_plan(project)
        note = ("no run yet" if not saved else
                changes.note(project.task_file_name, " since the last run")
                if changes is not None else None)
    except StateError as exc:
        # A changed task file still lets the user see what the last run did.
        recorded = project.store.load()
        if recorded is None:
            raise
        state, note, saved = recorded, f"warning: {exc}", True
    if live_pid(project.store.base / "run.pid") is None:
        as_left_by_a_dead_run(state.tasks)
    history: Project | None = project
    if rehearsal and saved:   # its changes are in its own copy's history, never the user's
        from agentloop.run.rehearsal import where_changes_are

        history, where = where_changes_are(project, state.vcs or "")
        note = "\n".join(n for n in (note, where) if n)
    found = whereabouts(history, state) if history else NOTHING
    return StatusView(project, state, note, *found)


@dataclass(frozen=True)
class PlanLine:
    """--status without a task file: one plan of the repository, in brief."""

    task_file: str          # as recorded, relative to the root
    folder: Path            # where its state lives
    counts: dict[str, int]
    cost_usd: float
    cost_known: bool
    error: str | None = None    # why its state could not be read


def overview(cwd: Path) -> tuple[Path, list[PlanLine]]:
    """Every plan that has run in the repository around `cwd`: the root, and one line each."""
    from collections import Counter

    from agentloop.state import receipts
    from agentloop.state.project import plan_stores

    root, stores = plan_stores(cwd)
    lines = []
    for store in stores:
        try:
            state = store.load()
        except StateError as exc:
            lines.append(PlanLine("?", store.dir, {}, 0.0, False, str(exc)))
            continue
        if state is None:
            continue
        total = receipts.of_state(state)
        if live_pid(store.base / "run.pid") is None:
            as_left_by_a_dead_run(state.tasks)
        lines.append(PlanLine(state.task_file, store.dir,
                              dict(Counter(str(t.status) for t in state.tasks)),
                              total.cost_usd, total.cost_known))
    return root, lines
