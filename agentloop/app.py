"""The core operations behind the CLI: run, dry run and status. Each returns text to print."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from agentloop import taskfile
from agentloop.errors import StateError
from agentloop.events import Emit, Event, EventLog, fan_out
from agentloop.project import Project, load_state, open_project
from agentloop.state import State, TaskState, now
from agentloop.vcs import Change

RULES = ("rules: `## Heading` starts a group; tasks before the first one form the group "
         "\"(ungrouped)\"; `-`, `*`, `+` and numbered items are tasks; `- [x]` items are "
         "skipped as done; everything else is ignored.")


@dataclass(frozen=True)
class RunOptions:
    """Everything a run can be told from the command line."""

    model: str = "opus"
    vcs: str = "auto"
    allow_dirty: bool = False
    claude: str | None = None
    task_timeout: float | None = 7200.0
    reset: bool = False
    max_attempts: int = 5
    retry_model: str = "haiku"
    max_limit_waits: int = 5
    max_failures: int = 3
    backoff: float = 30.0
    iterations: int = 1
    only: int | None = None
    sleep: float = 0.0
    budget: float | None = None
    task_budget: float | None = None
    distill: bool = True
    distill_model: str = "haiku"
    review: bool = False
    review_model: str = "sonnet"
    max_review_rounds: int = 3

    @classmethod
    def from_cli(cls, options: dict[str, Any]) -> "RunOptions":
        """Pick the run's options out of click's parameters."""
        return cls(model=options["model"], vcs=options["vcs"], allow_dirty=options["allow_dirty"],
                   claude=options["claude_path"], task_timeout=options["task_timeout"],
                   reset=options["reset"], max_attempts=options["max_attempts"],
                   retry_model=options["retry_model"], max_limit_waits=options["max_limit_waits"],
                   max_failures=options["max_failures"], backoff=options["backoff"],
                   iterations=options["iterations"], only=options["only"],
                   sleep=options["sleep"], budget=options["budget"],
                   task_budget=options["task_budget"], distill=not options["no_distill"],
                   distill_model=options["distill_model"], review=options["review"],
                   review_model=options["review_model"],
                   max_review_rounds=options["max_review_rounds"])


def status(tasks_md: Path, cwd: Path, as_json: bool = False) -> str:
    """Where each task stands; reads the state without the run lock (writes are atomic)."""
    from agentloop.console import status_json, status_lines

    project = open_project(tasks_md, cwd)
    try:
        state, saved = load_state(project)
        note = "" if saved else "no run yet"
    except StateError as exc:
        # A changed task file still lets the user see what the last run did.
        recorded = project.store.load()
        if recorded is None:
            raise
        state, note = recorded, f"warning: {exc}"
    if as_json:
        data = status_json(state)
        data["note"] = note or None
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    lines = status_lines(state)
    return "\n".join(([note] if note else []) + lines)


def dry_run(tasks_md: Path, cwd: Path, reset: bool = False, max_attempts: int = 5) -> str:
    """The plan: every task as it would run, which are done, where fresh sessions start."""
    from agentloop.plan import session_plan

    project = open_project(tasks_md, cwd)
    if reset:
        parsed = taskfile.load(project.task_file)
        state = State(task_file=project.task_file_name, task_file_hash=parsed.sha256,
                      tasks=[TaskState.from_task(t) for t in parsed.tasks])
    else:
        state, _ = load_state(project)
    total = len(state.tasks)
    lines = [f"dry run: {project.task_file_name}, {total} task(s); nothing will run or be written"]
    for task, how in session_plan(state, max_attempts):
        lines.append(f"[{task.index}/{total}] {task.group} > {task.summary}  ({how})")
    lines.append(RULES)
    return "\n".join(lines)


def run(tasks_md: Path, cwd: Path, options: RunOptions, emit: Emit) -> list[str]:
    """Run the unfinished tasks; return the closing lines (how to undo a task)."""
    from functools import partial

    from agentloop import distill, retry
    from agentloop.agents.claude import ClaudeAgent
    from agentloop.runner import Options, Runner
    from agentloop.vcs import open_vcs

    project = open_project(tasks_md, cwd)
    taskfile.read_bytes(project.task_file)  # a missing task file leaves no trace behind
    agent = ClaudeAgent(options.claude)
    emit = fan_out(EventLog(project.store.events, now), emit)
    with project.store.lock():
        lines, leftovers = [], []
        if options.reset:
            leftovers = _open_changes(project)
            archived = project.store.archive(now())
            if archived is not None:
                lines.append(f"reset: the old state and logs are in {project.store.relative(archived)}")
        state, saved = load_state(project)
        if options.only is not None:
            _check_single(state, options.only, options.max_attempts)
        agent.check()
        kind = _vcs_kind(options.vcs, state if saved else None)
        vcs = open_vcs(kind, project.root, project.task_file, options.allow_dirty)
        notes = vcs.prepare()
        for change in leftovers:  # an interrupted attempt of the old state's: history drops it
            vcs.abandon(change)
        project.store.ensure_ignored()
        advisor = partial(retry.advise, agent.program, options.retry_model, cwd=project.root)
        runner = Runner(project, state, agent, vcs,
                        Options(model=options.model, task_timeout=options.task_timeout,
                                max_attempts=options.max_attempts,
                                max_limit_waits=options.max_limit_waits,
                                max_failures_in_row=options.max_failures,
                                backoff=options.backoff, iterations=options.iterations,
                                sleep=options.sleep, budget=options.budget,
                                task_budget=options.task_budget, review=options.review,
                                review_model=options.review_model,
                                max_review_rounds=options.max_review_rounds), emit, advisor,
                        distiller=partial(distill.distill, agent.program, options.distill_model,
                                          cwd=project.root) if options.distill else None)
        runner.run(tuple(lines + notes), only=options.only)
        return undo_lines(state)


def _check_single(state: State, index: int, max_attempts: int) -> None:
    """--task N: N must exist and still be runnable."""
    from agentloop.plan import exhausted

    if index > len(state.tasks):
        raise StateError(f"there is no task {index}: the task file has {len(state.tasks)}")
    task = state.tasks[index - 1]
    if task.status in ("completed", "skipped"):
        raise StateError(f"task {index} is {task.status} already; --reset starts over")
    if exhausted(task, max_attempts):
        raise StateError(f"task {index} used all its {task.attempts} attempts; "
                         "--reset starts over")


def _open_changes(project: Project) -> list[Change]:
    """Changes of attempts an old state left open (running or interrupted), for --reset."""
    try:
        old = project.store.load()
    except StateError:
        return []
    return [Change(change_id=t.change_id, commit_id=t.commit_id or "")
            for t in (old.tasks if old else [])
            if t.status in ("running", "interrupted") and t.change_id]


def _vcs_kind(asked: str, state: State | None) -> str:
    """The backend for this run: a run that began with one VCS goes on with it."""
    if state is None or state.vcs is None or asked == state.vcs:
        return asked
    if asked == "auto":
        return state.vcs
    raise StateError(f"this run began with --vcs {state.vcs}; go on with it, or start over "
                     f"with --reset --vcs {asked}")


def follow(tasks_md: Path, cwd: Path, poll: float = 0.2) -> Iterator[Event]:
    """--status --follow: the events of the newest run, then new ones as they come, until that
    run finishes (or Ctrl+C). Reads events.jsonl only: the running loop never waits for us."""
    import time

    from agentloop.events import RunFinished, from_json

    path = open_project(tasks_md, cwd).store.events
    while not path.exists():
        time.sleep(poll)
    with open(path, "rb") as log:
        # Start at the newest run: find the last RunStarted.
        starts, offset = [0], 0
        for line in log:
            if b'"type":"RunStarted"' in line:
                starts.append(offset)
            offset += len(line)
        log.seek(starts[-1])
        pending = b""
        while True:
            chunk = log.readline()
            if not chunk:
                time.sleep(poll)
                continue
            pending += chunk
            if not pending.endswith(b"\n"):
                continue  # the writer is mid-line
            event, pending = from_json(pending), b""
            if event is None:
                continue
            yield event
            if isinstance(event, RunFinished):
                return


def undo_lines(state: State) -> list[str]:
    """How to take back one task's change, for the VCS this run used."""
    done = [t for t in state.tasks if t.status == "completed" and t.change_id]
    if not done:
        return []
    example = done[-1].change_id or ""
    if state.vcs == "jj":
        how = f"jj abandon {example[:12]}"
    elif state.vcs == "git":
        how = f"git revert {example[:12]}"
    else:
        return []
    return [f"To undo one task, e.g. task {done[-1].index}: {how} (the other tasks' changes stay); "
            "`agent-loop --status` lists every task's change."]
