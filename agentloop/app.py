"""The core operations behind the CLI: run, dry run, init, integrate, stop. Each returns data; the
CLI renders it (agentloop.console.render) as text or JSON. `--status` has a module of its own
(agentloop.standing), light enough to answer before the rest is loaded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from agentloop.errors import StateError, TaskFileError
from agentloop.ondemand import dataclass as on_first_use
from agentloop.state.project import Project, open_project, rehearsal_of, took_over
from agentloop.state.schema import State
from agentloop.state.status import TaskStatus as S

# Each operation imports what it needs when it runs.
if TYPE_CHECKING:
    from agentloop.fleet.integrate import Integrated
    from agentloop.options.record import RunOptions
    from agentloop.plan.parse import Read, TaskFile
    from agentloop.run.events import Emit, Event, RunFinished
    from agentloop.run.hooks import Hooks
    from agentloop.run.rebuilt import History
    from agentloop.run.selection import PlanRow
    from agentloop.vcs.preflight import Asked


@on_first_use(frozen=True)  # a plain run never makes one (agentloop.ondemand)
class PlanView:
    """--dry-run: every task as it would run, and what the task file holds besides tasks."""

    project: Project
    rows: tuple[PlanRow, ...]
    ignored: tuple[tuple[int, str, str], ...] = ()    # (line, text, why)
    warnings: tuple[str, ...] = ()
    context: str = ""
    folded: tuple[tuple[int, str, int], ...] = ()     # (line, text, line of its task)
    ran: bool = False       # whether this plan has run before (its state was saved)
    # The groups that would run, in waves that can start at once: (wave, group, waits for).
    schedule: tuple[tuple[int, str, tuple[str, ...]], ...] = ()
    parallel: int = 1
    sandbox: tuple[str, ...] = ()    # what the agents may do inside --sandbox
    budget: str = ""                 # --budget: what is spent and how far it can be passed


@on_first_use(frozen=True)  # made ahead, while the first agent works (run.ahead)
class RunResult:
    """A run that went to its end: the summary and the state it left."""

    project: Project
    state: State
    summary: RunFinished


def dry_run(tasks_md: Path, cwd: Path, options: RunOptions) -> PlanView:
    """The plan: every task as it would run, which are done, where fresh sessions start.
    Refuses what the real run would refuse before it starts (run.start.admit), with the same
    message and exit code."""
    from agentloop.options.record import check_usage
    from agentloop.plan.depends import waves
    from agentloop.run.selection import plan_rows
    from agentloop.run.start import admit, sandbox_preview, tree_warning
    from agentloop.run.verify import task_checks
    from agentloop.state.reconcile import reworded_lines
    from agentloop.vcs.stays_git import vcs_notes

    check_usage(options)
    _not_a_link(tasks_md, cwd)
    project = open_project(tasks_md, cwd)
    try:
        admitted = admit(project, options)
    except TaskFileError:
        from agentloop.state.plan_copy import said_if_kept

        said_if_kept(project)  # gone: where the last run kept it, if it did
        raise
    state, options = admitted.state, admitted.options
    rows = plan_rows(state, options.max_attempts, options.only, options.again,
                     options.include_optional)
    rows = [replace(r, checks=task_checks(options, state.tasks[r.index - 1])) for r in rows]
    ignored = tuple((int(i.get("line", 0)), str(i.get("text", "")), str(i.get("why", "")))
                    for i in state.ignored)
    folded = tuple((int(f.get("line", 0)), str(f.get("text", "")), int(f.get("into", 0)))
                   for f in state.folded)
    # A rehearsal works in a copy of its own: the user's tree is no business of it.
    tree = tree_warning(project, admitted) if any(r.runs for r in rows) and \
        not options.rehearse else None
    warnings = (*_working_now(project, state), *took_over(project), *state.warnings,
                *vcs_notes(options.vcs, project.root),
                *([admitted.rebuilt] if admitted.rebuilt else []),
                *([admitted.agent_note] if admitted.agent_note else []),
                *admitted.found,
                *reworded_lines(state.tasks, project.shown(project.task_file)),
                *([f"the run would stop here: {tree}"] if tree else []))
    boxed, refused = sandbox_preview(project, options, admitted.agent)
    warnings += (f"the run would stop here: {refused}",) if refused else ()
    running = [r.group for r in rows if r.runs]
    schedule = tuple((n, g, tuple(state.depends.get(g, ())))
                     for n, wave in enumerate(waves(running, state.depends), 1) for g in wave)
    return PlanView(project, tuple(rows), ignored, warnings, state.context or "", folded,
                    ran=admitted.saved, schedule=schedule, parallel=options.parallel,
                    sandbox=boxed, budget=_budget_line(state, options, admitted.agent, rows))


def _working_now(project: Project, state: State) -> list[str]:
    """--dry-run beside a run: the one line that says a run is working (its pid, and the task
    of this plan it is on, as its records say), so the plan shown is read as a moment of it.
    Whether a run works, and on which plan, is the run lock's to say (a `running` record and
    a live pid may be a killed run's, the pid reused since)."""
    from agentloop.state.runlock import working

    found = working(project.store.base, project.store.dir)
    if found is None:
        return []
    pid, here = found
    who = f"a run (pid {pid})"
    if not here:
        return [f"{who} is working on another plan in this repository now: this plan runs "
                "once it ends"]
    plan = project.shown(project.task_file)
    on = [t for t in state.tasks if t.status == S.RUNNING]
    if not on:
        return [f"{who} is working on {plan} now, between its tasks: what is shown here is "
                "this moment of it"]
    tasks = "; ".join(f"task {t.index} ({t.summary})" for t in on)
    return [f"{who} is working on {plan} now, on {tasks}: what is shown here is this moment "
            "of it"]


def _budget_line(state: State, options: RunOptions, agent: str, rows: list[PlanRow]) -> str:
    """--dry-run's word on --budget: what is spent, and by how much at most it can be passed."""
    from agentloop.agents import make_agent
    from agentloop.run import budget
    from agentloop.state.receipts import money, spent

    if options.budget is None:
        return ""
    checked = any(r.checks for r in rows if r.runs)
    low = budget.cap_too_low(options, state)
    return (f"budget: {money(options.budget)} for this plan since its last --reset, "
            f"{money(spent(state))} spent so far; "
            f"{budget.bound(options, make_agent(agent).caps_spend, checked)}"
            + (f"; warning: {low}" if low else ""))


def _not_a_link(tasks_md: Path, cwd: Path) -> None:
    given = tasks_md if tasks_md.is_absolute() else cwd / tasks_md
    if given.is_symlink():
        # Kept out of every task's change by its path: a link would let its target in.
        raise TaskFileError(f"the task file {tasks_md} is a symlink: point agent-loop at the "
                            f"file itself ({given.resolve()})")


def redone_by_reset(tasks_md: Path, cwd: Path) -> int:
    """How many tasks the saved state has done that --reset would have the agent do again."""
    try:
        saved = open_project(tasks_md, cwd).store.load()
    except StateError:
        return 0  # a damaged state: --reset is how the user gets past it
    # Landing, held and conflicted tasks are finished agent work too, only not on the main line yet.
    paid = (S.COMPLETED, S.UNAPPROVED, S.LANDING, S.HELD, S.CONFLICTED)
    return sum(1 for t in saved.tasks if t.status in paid) if saved else 0


def run(tasks_md: Path, cwd: Path, options: RunOptions, emit: Emit) -> RunResult:
    """Run the unfinished tasks; return the summary."""
    from agentloop.options.record import check_usage
    from agentloop.plan import parse

    check_usage(options)
    _not_a_link(tasks_md, cwd)
    project = open_project(tasks_md, cwd, take_over=not options.rehearse)
    if options.rehearse:
        from agentloop.vcs.private_copy import kind_of

        kind_of(project.root, options.vcs)  # no repository: said before anything is made
        project = rehearsal_of(project)
    # Read once, and parsed before anything is touched: a missing or empty task file leaves no
    # trace, and --reset archives nothing for a file it could not run. A plan the state holds
    # already (its hash) is the state's tasks, never parsed: that takes marko and its time.
    try:
        source = parse.read(project.task_file)
    except TaskFileError:
        from agentloop.state.plan_copy import said_if_kept

        said_if_kept(project)  # gone: where the last run kept it, if it did
        raise
    history = _history_beside(project, options)
    asked: Asked | None = None
    early: frozenset[int] = frozenset()
    try:
        asked = _git_beside(project, options)
        from agentloop.proc import pending_reads

        early = pending_reads()
        # The run's own modules are loaded while those git commands run.
        from agentloop.plan.source import READER
        from agentloop.run.eventlog import EventLog
        from agentloop.run.events import fan_out
        from agentloop.run.start import start_run  # noqa: F401 - loaded beside the git reads
        from agentloop.state.schema import now

        plan = source if options.push is None and not (options.reset or options.rehearse) and \
            project.store.holds(source.sha256, READER) else parse.parsed(source)
    except BaseException:
        _join(history, asked, failing=True, early=early)
        raise
    from agentloop.run.ahead import make_ahead_too

    make_ahead_too(RunResult)  # its record, made while the first agent works
    events = EventLog(project.store.events, now)
    report = fan_out(events, emit)  # the run's events, to the log and to the caller
    hooks = _hooks(project, options, report)
    told = report if hooks is None else fan_out(report, hooks)  # and to the hooks after them
    try:
        state, summary = _locked(project, plan, options, told, hooks, history, asked)
    except BaseException:
        events.close()
        _join(history, asked, failing=True, early=early)
        raise
    events.close()
    _join(history, asked, failing=False)
    return RunResult(project, state, summary)


def _locked(project: Project, plan: TaskFile | Read, options: RunOptions, told: Emit,
            hooks: Hooks | None, history: History | None,
            asked: Asked | None) -> tuple[State, RunFinished]:
    """The run (or the fleet job) under the run lock, and the hooks told how it ended."""
    try:
        with project.store.lock():
            if options.push is not None:  # a fleet job
                from agentloop.fleet.job import run_job
                from agentloop.plan import parse

                state, summary = run_job(project, parse.parsed(plan), options, told)
            else:
                from agentloop.run.start import start_run

                state, summary = start_run(project, plan, options, told, history=history,
                                           asked=asked)
    except BaseException as exc:
        # After the lock is let go: a hook may start agent-loop again.
        if hooks is not None:
            hooks.finished(None, exc)
        raise
    if hooks is not None:
        hooks.finished(summary, None)
    return state, summary


def _hooks(project: Project, options: RunOptions, report: Emit) -> Hooks | None:
    """The watcher that runs the user's hooks (agentloop.run.hooks), for a run that has one;
    None, and the module left unloaded, for a run without (most runs)."""
    if not (options.on_task or options.on_finish):
        return None
    from agentloop.run.hooks import Hooks

    return Hooks(project, options, report)


def _join(history: History | None, asked: Asked | None, failing: bool,
          early: frozenset[int] = frozenset()) -> None:
    """The git commands started beside the set-up end before the run does (waited for
    already, unless the run stopped before it looked at them). Each is waited for whatever the
    other does; what one of them raised reaches the user only when the run itself did not
    fail, whose own error is the one to say. `early`: those started before the lock and the
    plan's parse (proc.pending_reads), which a failing run stops rather than waits for: a run
    refused, or stopped, at its start does not wait for a `git status` of a large checkout."""
    if failing:  # their answers are not needed now: stopped, not waited for (only reads)
        from agentloop.proc import cut_reads

        cut_reads(early)
    first: Exception | None = None
    for wait in (history, *(asked[1:] if asked is not None else ())):
        if wait is None:
            continue
        try:
            wait()
        except Exception as exc:
            first = first or exc
    if first is not None and not failing:
        raise first


def _history_beside(project: Project, options: RunOptions) -> History | None:
    """A run that finds no state reads what history says is done (agentloop.run.rebuilt): that
    one git or jj command, which changes nothing, starts now and runs while the plan is parsed
    and the run is set up; None when the run will not ask for it."""
    from agentloop.run.rebuilt import asks_history, read_history

    if options.push is not None or not asks_history(options) or \
            project.store.state_path.exists():
        return None
    return read_history(project, options.vcs)


def _git_beside(project: Project, options: RunOptions) -> Asked | None:
    """What preflight asks git (who commits, whether commits are signed), started now beside
    the history's read and the plan's parse rather than after the state is loaded: two
    commands that change nothing. None when git makes no commit here, and for a rehearsal or a
    fleet job, which ask where their own working copy is."""
    from agentloop.vcs.preflight import ask_git

    if options.push is not None or options.rehearse:
        return None
    return ask_git(options.vcs, project.root, look=True)


def integrate(tasks_md: Path, cwd: Path, options: RunOptions, emit: Emit) -> "Integrated":
    """--integrate --from REMOTE: every finished group's job on the current branch, the states
    merged (agentloop.fleet.integrate)."""
    from agentloop.fleet.integrate import integrate as bring_in
    from agentloop.options.record import check_usage
    from agentloop.plan import parse
    from agentloop.run.eventlog import EventLog
    from agentloop.run.events import fan_out
    from agentloop.state.schema import now

    check_usage(options)
    _not_a_link(tasks_md, cwd)
    project = open_project(tasks_md, cwd)
    plan = parse.load(project.task_file)
    events = EventLog(project.store.events, now)
    try:
        with project.store.lock():
            return bring_in(project, plan, options, fan_out(events, emit))
    finally:
        events.close()


def follow(tasks_md: Path, cwd: Path, poll: float = 0.2,
           watched: Callable[[], bool] = lambda: True) -> Iterator[Event]:
    """--status --follow: the events of the newest run, then new ones as they come, until that
    run finishes (or Ctrl+C), or no one is `watched` any more (the reader of a pipe left);
    StateError once the run is found gone without finishing (killed), or at once for a plan no
    run has started (there is nothing to wait for). Reads events.jsonl and peeks at the run
    lock only: the running loop never waits for us."""
    from agentloop.files.shown import typed_path
    from agentloop.run import events
    from agentloop.run.eventlog import follow as follow_log
    from agentloop.state.runlock import working

    store = open_project(tasks_md, cwd).store

    def going() -> bool:
        found = working(store.base, store.dir)
        return watched() and found is not None and found[1]

    if not store.events.exists() and not going():
        run = f"agent-loop {typed_path(tasks_md)}"
        raise StateError(f"{tasks_md} has not been run (no state): `{run}` runs it, and "
                         "--status --follow then follows it from another terminal")
    last = None
    for last in follow_log(store.events, poll, going):
        yield last
        if not watched():
            return
    if not isinstance(last, events.RunFinished) and watched():
        status = f"agent-loop {typed_path(tasks_md)} --status"
        raise StateError(f"the run of {tasks_md} ended without finishing (killed?); "
                         f"`{status}` shows where it left off")


def init(tasks_md: Path, cwd: Path) -> str:
    """--init: write a commented example plan; never over an existing file."""
    from agentloop.files.shown import typed_path
    from agentloop.plan.example import starter_plan

    path = tasks_md if tasks_md.is_absolute() else cwd / tasks_md
    if path.exists():
        raise TaskFileError(f"{tasks_md} exists already; --init writes a new plan only")
    try:
        path.write_text(starter_plan(), encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"cannot write {tasks_md}: {exc.strerror or exc}") from None
    return (f"wrote {tasks_md}: an example plan. Try it offline, for free: "
            f"agent-loop {typed_path(tasks_md)} --rehearse")


def ask_to_stop(tasks_md: Path, cwd: Path) -> str:
    """--stop-after-running: leave the request the run's controller looks for before each task
    (agentloop.run.controller), whatever --parallel is; a run that starts later clears it."""
    from agentloop.run.controller import stop_flag
    from agentloop.state.runlock import run_of_plan

    project = open_project(tasks_md, cwd)
    pid = run_of_plan(project.store.base, project.store.dir, project.task_file_name)
    flag = stop_flag(project.store.dir)
    flag.write_text(f"{pid}\n")
    return (f"asked the run of {project.task_file_name} (pid {pid}) to stop after its running "
            "tasks: no new task starts, the running ones finish and land")
