"""Wires one run together: the state, the chosen agent and VCS, the helpers, then the loop.

The one place besides agents/ that turns names (`--agent`, `--vcs`) into programs.
"""

from __future__ import annotations

from functools import partial

from agentloop.agents import AGENTS, make_agent
from agentloop.errors import StateError
from agentloop.options import RunOptions
from agentloop.run import distill, rehearsal, remembered, retry
from agentloop.run.context import Run
from agentloop.run.events import Emit, RunFinished
from agentloop.run.loop import run_tasks
from agentloop.run.selection import exhausted
from agentloop.state.learnings import Learnings
from agentloop.state.project import Project, load_plan
from agentloop.state.schema import State, TaskState, now
from agentloop.vcs import Change
from agentloop.vcs.choose import open_vcs
from agentloop.vcs.preflight import preflight

DEFAULT_AGENT = "claude"


def start_run(project: Project, options: RunOptions, emit: Emit) -> tuple[State, RunFinished]:
    """Everything a run does while it holds the lock (a rehearsal's: `project` is its own)."""
    notes: list[str] = []
    leftovers: list[Change] = []
    kind, task_file = None, project.task_file
    if options.rehearse:
        project, kind, task_file, notes = rehearsal.prepare(project, options.vcs)
    if options.reset:
        leftovers = _open_changes(project)
        archived = project.store.archive(now())
        if archived is not None:
            shown = project.store.relative(archived)
            notes.append(f"reset: the old state and logs are in {shown}")
    state, saved, changes = load_plan(project)
    if not options.rehearse:
        notes += rehearsal.check_real_run(project, state, saved)
    options, dropped = remembered.recall(options, state.remembered)
    if dropped:
        notes.append(dropped)
    state.remembered = remembered.remember(options)
    if changes is not None:
        notes.append(f"{project.task_file_name} changed: {changes.summary()}")
        if changes.dropped:
            kept = project.store.keep_removed(list(changes.dropped), now())
            notes.append(f"the records of removed and reworded tasks are kept in "
                         f"{project.store.relative(kept)}; their cost still counts")
    name = choose_agent(options, state if saved else None)
    agent = make_agent(name, options.agent_program)
    if options.only is not None:
        check_single(state, options.only, options.max_attempts, options.again)
    agent.check()
    kind = kind or vcs_kind(options.vcs, state if saved else None)
    notes += preflight(kind, project.root, task_file)
    vcs = open_vcs(kind, project.root, task_file, options.allow_dirty)
    notes += vcs.prepare()
    project.store.hold_vcs_lock()  # the repository prepare() may just have made
    for change in leftovers:  # an interrupted attempt of the old state's: history drops it
        vcs.abandon(change)
    state.agent = name
    if options.only is not None and options.again:
        again(state.tasks[options.only - 1])
    root = project.root
    run = Run(project, state, agent, vcs, options, emit, Learnings(project.store.dir),
              advisor=partial(retry.advise, agent, options.retry_model or agent.models.helper,
                              cwd=root),
              distiller=partial(distill.distill, agent,
                                options.distill_model or agent.models.helper, cwd=root)
              if options.distill else None)
    return state, run_tasks(run, options.only, tuple(notes))


def choose_agent(options: RunOptions, state: State | None) -> str:
    """The agent for this run: a run that began with one agent goes on with it."""
    asked = options.agent_name
    if asked not in AGENTS:
        raise StateError(f"unknown agent {asked!r}: choose one of {', '.join(sorted(AGENTS))}")
    began = state.agent if state is not None else None
    # A rehearsal's state is its own (agentloop.run.rehearsal): neither passes for the other.
    if began is None or began == asked or options.rehearse:
        return asked
    if options.agent == DEFAULT_AGENT:
        return began
    raise StateError(f"this run began with --agent {began}; go on with it, or start over with "
                     f"--reset --agent {asked}")


def check_single(state: State, index: int, max_attempts: int, again_: bool) -> None:
    """--task N: N must exist and still be runnable (or be asked for --again)."""
    if index > len(state.tasks):
        raise StateError(f"there is no task {index}: the task file has {len(state.tasks)}")
    task = state.tasks[index - 1]
    if again_:
        if task.status in ("running", "interrupted", "pending"):
            raise StateError(f"task {index} is {task.status}; run it with --task {index} "
                             "(without --again)")
        return
    if task.status in ("completed", "skipped"):
        raise StateError(f"task {index} is {task.status} already; --task {index} --again runs "
                         "it once more in a new change")
    if exhausted(task, max_attempts):
        raise StateError(f"task {index} used all its {task.attempts} attempts; "
                         f"--task {index} --again gives it new ones")


def again(task: TaskState) -> None:
    """--again: the task runs once more, in a new change, with new attempts; its earlier
    change stays in history (and in the task's records)."""
    task.status, task.attempts, task.error, task.feedback = "pending", 0, None, None
    task.change_id = task.commit_id = None
    task.stalled_runs = 0


def _open_changes(project: Project) -> list[Change]:
    """Changes of attempts an old state left open (running or interrupted), for --reset."""
    try:
        old = project.store.load()
    except StateError:
        return []
    return [Change(change_id=t.change_id, commit_id=t.commit_id or "")
            for t in (old.tasks if old else [])
            if t.status in ("running", "interrupted") and t.change_id]


def vcs_kind(asked: str, state: State | None) -> str:
    """The backend for this run: a run that began with one VCS goes on with it."""
    if state is None or state.vcs is None or asked == state.vcs:
        return asked
    if asked == "auto":
        return state.vcs
    raise StateError(f"this run began with --vcs {state.vcs}; go on with it, or start over "
                     f"with --reset --vcs {asked}")
