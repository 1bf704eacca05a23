"""One agent run, the same way for the developer, its fix runs and the reviewer: recorded in the
task's history and its own log before it starts, its result recorded as soon as it ends (both
handed to the controller, which writes the records: agentloop.run.handover).

What happens when it is stopped (Ctrl+C, a kill) is not decided here: the attempt around it
(agentloop.attempt) drops the attempt's change and uncounts it, once, for every kind of run.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterator

from agentloop import lane_mark
from agentloop.agents import LIMIT, AgentResult, AgentRun, Totals, clean, ended_well, priced
from agentloop.errors import GitUnsafe, Interrupted, say_first
from agentloop.proc import running
from agentloop.run.context import Run
from agentloop.run.decisions import RunBegun, RunEnded
from agentloop.run.events import AgentActivity, AgentFinished, AgentStarted
from agentloop.run.handover import begin, hand
from agentloop.run.lane_tag import LaneNote
from agentloop.state.schema import Attempt, State, TaskState
from agentloop.vcs import submodule_gitdirs
from agentloop.vcs.protocol import Change


def log_path(run: Run, task: TaskState, number: int, role: str = "developer", round_: int = 0,
             iteration: int = 1, kind: str = "review") -> Path:
    """The run's log: NNN-task.log, -attempt2.log, -attempt2-iter3.log; a review round's
    `…-review1.log` and fix `…-fix1.log`, a check's fix `…-checkfix1.log`, and `-run2` for a
    second run in the same round, or of the same attempt (after a usage limit)."""
    store = run.project.store
    before = sum(1 for a in task.history if a.number == number and a.role == role
                 and a.round == round_ and (round_ or a.iteration == iteration))
    if not round_:  # a run again after a usage limit: the same attempt, a second run
        path = store.log_path(task.log_name, number, iteration)
        return path.with_name(f"{path.stem}-run{before + 1}.log") if before else path
    base = store.log_path(task.log_name, number)
    fix = {"checks": "checkfix", "conflict": "conflict"}.get(kind, "fix")
    name = f"{base.stem}-{'review' if role == 'reviewer' else fix}{round_}"
    return base.with_name(name + (f"-run{before + 1}" if before else "") + ".log")


def workdir_of(run: Run) -> str:
    """Where this run's agent works, from the repository root: "." for the checkout."""
    return os.path.relpath(run.cwd, run.project.root)


def run_agent(run: Run, task: TaskState, change: Change, prompt: str, number: int,
              resume: str | None = None, role: str = "developer", round_: int = 0,
              iteration: int = 1, kind: str = "review") -> tuple[Attempt, AgentResult]:
    """Run the agent once for `task`; return its record and result. `kind`: what a fix run
    (round_ > 0) answers, "review" feedback or failing "checks"."""
    if running.stopping():
        # Ctrl+C came as this lane got here: no record of a run that never starts (one of
        # unknown cost would count against --budget: agentloop.run.budget), and no run.
        raise Interrupted("interrupted")
    log = log_path(run, task, number, role, round_, iteration, kind)
    attempt = begin(run, task, RunBegun(change, number, run.project.store.relative(log),
                                        resume is not None, iteration, role, round_,
                                        workdir_of(run)))
    # A limit another lane met holds every lane's next request: held, not started. The waits'
    # module loads only then (agentloop.run.waits), not in each lane's thread as it starts.
    if run.lane and run.shared.paused_until > run.clock.time():
        from agentloop.run.waits import hold

        hold(run)
    run.emit(AgentStarted(str(log), resume, run.agent.name, role))
    request = AgentRun(prompt=clean(prompt), model=run.model(role), cwd=run.cwd,
                       log=log, raw_log=log.with_suffix(".jsonl"), resume=resume,
                       header=_header(run, task, role, round_, iteration, kind),
                       timeout=run.options.task_timeout, budget_usd=run.options.task_budget,
                       read_only=role == "reviewer",
                       before=_session_totals(run.state, resume, task),
                       meanwhile=_meanwhile(run), env=_lane_env(run))
    began = run.clock.monotonic()
    window = [time.time_ns(), 0]   # the file system's clock, for the plan's time of write
    with run.shared.lock:
        run.shared.agent_runs.append(window)
    try:
        result = priced(run.agent.run(request, lambda now: run.emit(
            AgentActivity(now.text, now.tool, now.tool_calls, now.turns))), run.options.prices)
    finally:
        window[1] = time.time_ns()
        # Before any git of agent-loop's reads what the agent may have pointed a submodule at.
        unsafe = _guard(run, task)
    hand(run, task, RunEnded(attempt, result))
    if unsafe is not None:  # recorded as it ended; nothing of agent-loop's runs git after it
        raise GitUnsafe(unsafe)
    limited = not result.ok and _failed_at_a_limit(run, result)
    # Named by its task: a landing's conflict rounds end after the next task began.
    run.emit(AgentFinished(result, run.clock.monotonic() - began, attempt.cost_usd, role,
                           limited=limited, index=task.index))
    return attempt, result


def ended_unrecorded(run: Run, task: TaskState, record: Attempt) -> AgentResult | None:
    """The result of the agent run `record` names, read back from its raw log, when a kill of
    agent-loop came after the agent ended well and before that was recorded (the record has no
    exit code); None otherwise. A raw log older than the record is an earlier run's (a run
    killed before its agent wrote one): not this one's."""
    if record.exit_code is not None or not record.log:
        return None
    log = run.project.root / record.log
    raw_log = log.with_suffix(".jsonl")
    try:
        written = raw_log.stat().st_mtime
        began = datetime.fromisoformat(record.started_at).timestamp()
    except (OSError, ValueError):
        return None
    if written < began - 1:  # started_at has whole seconds
        return None
    request = AgentRun(prompt="", model=run.model(record.role), cwd=run.cwd, log=log,
                       raw_log=raw_log)
    result = ended_well(run.agent, request)
    if result is not None and record.resumed and result.session_id:
        # A resumed session's totals: the run's own part is what it added to them.
        result = ended_well(run.agent, replace(
            request, resume=result.session_id,
            before=_session_totals(run.state, result.session_id, task)))
    return priced(result, run.options.prices) if result is not None else None


def _session_totals(state: State, session_id: str | None, task: TaskState) -> Totals:
    """A session's running totals after its newest recorded run (nothing for a fresh one): an
    agent that resumes a session reports the session's totals, and a run is charged only what
    it added to them. Read from the records, which the ledger alone writes."""
    if not session_id:
        return Totals()
    # A reworded task's runs are retired, not gone: the session they ran in still holds them.
    runs = [a for a in state.retired if a.session_id == session_id] + \
        [a for t in _group_of(state, task) for a in t.history if a.session_id == session_id]
    if not runs:
        return Totals()
    last = max(runs, key=lambda a: a.session_cost_usd)
    newest = runs[-1] if runs[-1].session_usage else last
    return Totals(last.session_cost_usd, dict(newest.session_usage))


def _group_of(state: State, task: TaskState) -> list[TaskState]:
    """The run of tasks around `task` with its group: a session never leaves one (a new group
    starts a fresh session), and looking no further keeps a task's cost the same at any size."""
    first = last = task.index - 1
    while first > 0 and state.tasks[first - 1].group == task.group:
        first -= 1
    while last + 1 < len(state.tasks) and state.tasks[last + 1].group == task.group:
        last += 1
    return state.tasks[first:last + 1]


def _failed_at_a_limit(run: Run, result: AgentResult) -> bool:
    """Whether a failed run met a usage limit: read by the agent's own error kinds, loaded only
    when a run fails (agentloop.run.waits, agentloop.agents.claude_errors)."""
    from agentloop.run.waits import classify

    return classify(run, result).kind == LIMIT


def _guard(run: Run, task: TaskState) -> str | None:
    """Right after an agent run in your checkout, before agent-loop's next git there: a
    submodule's `.git` the agent pointed at a git folder of its own moved aside, and said
    (agentloop.vcs.submodule_gitdirs); the line that stops the run when one could not be."""
    if run.vcs.name != "git" or run.cwd != run.project.root:
        return None
    unsafe = None
    try:
        moved = submodule_gitdirs.guard(run.project.root, run.project.store.dir / GIT_DIRS,
                                        sandboxed=run.sandbox is not None)
    except submodule_gitdirs.NotMovedAside as exc:
        moved = exc.moved
        unsafe = submodule_gitdirs.not_moved_line(exc.failed, exc.error,
                                                  run.project.shown(exc.failed.kept))
    if moved:
        line = submodule_gitdirs.moved_line(
            moved, {m.kept: run.project.shown(m.kept) for m in moved}, run.project.root)
        run.emit(LaneNote(line))
        shared = run.shared
        shared.moved_aside[task.index] = (*shared.moved_aside.get(task.index, ()), line)
    return unsafe


@contextmanager
def moved_said_first(run: Run, task: TaskState) -> Iterator[None]:
    """`task`'s attempts and its landing: should they end in a stop or an error (files left
    unmerged, a commit that fails, Ctrl+C, an internal error), where `_guard` moved a `.git`
    meanwhile is said first with it (that line went to stdout as the agent ended: a
    `| head` ended it, or it scrolled away)."""
    try:
        yield
    except BaseException as exc:
        say_first(exc, run.shared.moved_aside.get(task.index, ()))
        raise
    finally:
        run.shared.moved_aside.pop(task.index, None)


# Under the plan's own folder in .agent-loop/: a submodule's `.git` an agent swapped, kept.
GIT_DIRS = "submodule-git-folders"


def _lane_env(run: Run) -> tuple[tuple[str, str], ...]:
    """An agent in a lane marks its git's reflog entries with its lane's mark (lane_mark): what
    it ran in your checkout is said by its own lane's check alone."""
    if run.cwd == run.project.root:
        return ()
    return (("GIT_REFLOG_ACTION", lane_mark(run.cwd.name)),)


def _meanwhile(run: Run) -> Callable[[], None] | None:
    """What the agent's wait does now and then: the task before's landing, left running
    beside this agent (agentloop.run.beside.landed_meanwhile), settled once it has landed, not
    once this agent ends; None when none runs."""
    return None if run.shared.landing is None else run.shared.meanwhile


def _header(run: Run, task: TaskState, role: str, round_: int, iteration: int,
            kind: str) -> tuple[tuple[str, str], ...]:
    header: tuple[tuple[str, str], ...] = (
        ("task", f"{task.index}/{len(run.state.tasks)} {task.summary}"), ("group", task.group),
        ("attempt", str(task.attempts)))
    if run.options.iterations > 1 and not round_:
        header += (("iteration", f"{iteration}/{run.options.iterations}"),)
    if round_ and kind == "checks":
        header += (("role", role), ("check fix round", f"{round_}/{run.options.check_rounds}"))
    elif round_:
        header += (("role", role), ("review round", f"{round_}/{run.options.max_review_rounds}"))
    return header
