"""Wires one run together: the state, the chosen agent and VCS, the helpers, then the loop.

The one place besides agents/ that turns names (`--agent`, `--vcs`) into programs.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from agentloop import collector, proc
from agentloop.agents import AGENTS, child_env, make_agent, own_layers, unpriced
from agentloop.errors import AgentLoopError, StateError, UsageError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.options.record import EVENT_PREFIX, RunOptions, check_usage
from agentloop.plan import parse
from agentloop.plan.parse import Read, TaskFile
from agentloop.run import ledger, rehearsal, remembered
from agentloop.run.ahead import load_ahead_too, ready_beside
from agentloop.run.context import FleetJob, Run
from agentloop.run.events import Emit, RunFinished
from agentloop.run.loop import run_tasks
from agentloop.run.rebuilt import History, asks_history, from_history, named_by_jj, readded
from agentloop.run.repo_hooks import start_notes
from agentloop.run.selection import runnable, select
from agentloop.run.workplace import wants_lane
from agentloop.state.learnings import Learnings
from agentloop.state.project import Project, load_plan, state_from, took_over
from agentloop.state.schema import State, now
from agentloop.state.status import TaskStatus as S
from agentloop.vcs import STATE_DIR
from agentloop.vcs.choose import open_vcs
from agentloop.vcs.preflight import Asked, ask_git, preflight, settle
from agentloop.vcs.protocol import Change, Discards, RefusesDirty
from agentloop.vcs.stays_git import vcs_notes

if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.agents import Agent
    from agentloop.run.distill import Message
    from agentloop.run.retry import Advice
    from agentloop.sandbox import Sandbox
    from agentloop.state.reconcile import Reconciled
    from agentloop.vcs.protocol import Vcs

DEFAULT_AGENT = "claude"
# The stand-in agent has no helper model: its tasks keep the plain commit message, and the
# console does not report a failed summary for every one of them.
REHEARSAL = "rehearse"


@dataclass(frozen=True)
class Admitted:
    """A run that passed every check made before anything is touched."""

    state: State
    saved: bool                     # whether the state was saved before
    changes: Reconciled | None      # what changed in the task file since (None: nothing)
    options: RunOptions             # with the selection resolved (`only`)
    agent: str
    vcs: str                        # the backend's kind, before auto is resolved
    rebuilt: str | None = None      # no state: the tasks history says are done, in one line
    found: tuple[str, ...] = ()     # tasks the plan's edit added that history says are done
    # The state named an agent not known here, and --agent took its place: said in one line.
    agent_note: str | None = None


def admit(project: Project, options: RunOptions, plan: TaskFile | Read | None = None,
          landed: frozenset[int] = frozenset(), history: History | None = None) -> Admitted:
    """What a run refuses before it touches anything, the same for --dry-run (which calls it
    too): the options together, the plan and its state, the selection, the agent and the VCS
    as named against those the plan began with. Not the agent's program or the working tree:
    a dry run needs neither to be ready. `plan`: the task file as the caller read it;
    `history`: the history's read, when the caller started it (read_history)."""
    check_usage(options)
    if options.rehearse:  # no repository, no rehearsal: said before anything is made
        from agentloop.vcs.private_copy import kind_of

        kind_of(project.root, options.vcs)
    if options.reset or options.rehearse:  # the state a reset (or a rehearsal, always afresh)
        # starts from, judged before the old one is archived
        fresh = parse.parsed(plan) if plan is not None else parse.load(project.task_file)
        state, saved, changes = state_from(project, fresh), False, None
    else:
        state, saved, changes = load_plan(project, plan)
    # No state (`.agent-loop/` cleaned away, a second clone): what history says is done.
    rebuilt = from_history(project, state, options.vcs, history) \
        if not saved and asks_history(options) else None
    if history is not None and saved:
        history()  # a state written since the caller looked: its git ends here all the same
    earlier = state if saved else None
    name = choose_agent(options, earlier)
    # Building an agent starts nothing: its class says whether it reports dollars.
    refuse_unpriced_budget(make_agent(name, options.agent_program), options)
    kind = vcs_kind(options.vcs, earlier)
    # A task the plan's edit added may be one deleted after it was done and put back: its
    # commit is in the history, as for a run that finds no state (one read, only then).
    found = tuple(readded(project, state, changes.added, kind)) \
        if changes is not None and changes.added and asks_history(options) else ()
    chosen = replace(options, only=select(state, options, landed))
    return Admitted(state, saved, changes, chosen, name, kind, rebuilt, found,
                    unknown_agent(earlier, name))


def tree_warning(project: Project, admitted: Admitted) -> str | None:
    """--dry-run: what the run would refuse in the working tree as it is now (uncommitted files
    under git), as a warning: the tree may well be clean by the time the run starts."""
    try:
        vcs = open_vcs(admitted.vcs, project.root, project.task_file,
                       admitted.options.allow_dirty, wants_lane(admitted.options, None))
        return vcs.uncommitted() if isinstance(vcs, RefusesDirty) else None
    except AgentLoopError as exc:
        return str(exc)


def start_run(project: Project, plan: TaskFile | Read, options: RunOptions, emit: Emit,
              job: FleetJob | None = None, first_notes: tuple[str, ...] = (),
              history: History | None = None,
              asked: Asked | None = None) -> tuple[State, RunFinished]:
    """Everything a run does while it holds the lock; `plan`: the task file, read once (parsed
    unless the state holds it already); `job`:
    a fleet job's part (agentloop.fleet.job), with its notes first; `history`: the history's
    read, started before (agentloop.run.rebuilt.read_history); `asked`: what preflight asks
    git, started before for `options.vcs` (agentloop.vcs.preflight.ask_git)."""
    requested = options.vcs  # what `asked` was asked for
    notes: list[str] = list(first_notes) + vcs_notes(options.vcs, project.root)
    kind, task_file = None, project.task_file
    if options.rehearse:  # its own state, its own working copy (agentloop.run.rehearsal)
        project, kind, task_file, rehearsed = rehearsal.prepare(project, options.vcs,
                                                              options.lane_copy,
                                                              options.lane_link)
        notes += rehearsed
    admitted = admit(project, options, plan, job.landed if job is not None else frozenset(),
                     history)
    state, options = admitted.state, admitted.options
    kind = kind or admitted.vcs
    # The caller asked about `options.vcs` as given: its answers serve when the run goes on
    # with that kind, or with git where git was asked already. A state that says git while
    # the early ask found jj making the commits (auto, a colocated repository) asks again:
    # git's identity and signing are checked before any agent is paid.
    reasked = None
    if asked is None or not (kind == requested or (kind == "git" and asked[1] is not None)):
        asked = reasked = ask_git(kind, project.root)  # its answers wait while the run is set up
    before = dict(state.remembered)
    try:
        options, box, agent, leftovers = _checked(project, admitted, options, kind, task_file,
                                                  asked, notes, emit)
    except BaseException as exc:
        if reasked is not None:  # its commands are reaped on every path (preflight's wait)
            settle(reasked)
        if not options.reset:  # a reset's old state may not be archived yet: left as it is
            ledger.remembered_on_stop(project, state, before, exc)
        raise
    try:
        lanes = wants_lane(options, job)
        vcs = open_vcs(kind, project.root, task_file, options.allow_dirty, lanes)
        notes += _made_ready(project, state, options, vcs, leftovers, lanes)
        if vcs.name == "jj":  # the repository jj may just have made from git's history
            named_by_jj(state, project.root)
        state.agent = admitted.agent
        if options.again:
            for index in options.only:
                if state.tasks[index - 1].status not in (S.PENDING, S.RUNNING, S.INTERRUPTED):
                    ledger.again(state.tasks[index - 1])
        run = _wired(project, state, admitted.agent, agent, vcs, options, emit, job, box)
    except BaseException as exc:
        ledger.remembered_on_stop(project, state, before, exc)
        raise
    return state, run_tasks(run, options.only, tuple(notes))


def _checked(project: Project, admitted: Admitted, options: RunOptions, kind: str,
             task_file: Path, asked: Asked, notes: list[str], emit: Emit,
             ) -> tuple[RunOptions, Sandbox | None, Agent, list[Change]]:
    """What a run checks and makes before it changes anything of the user's: the sandbox, the
    options it remembers, the agent's program, preflight's answers; a reset's old state
    archived, with the changes its open attempts left. Their lines go to `notes`. (the
    options as remembered, the sandbox, the agent, those changes)"""
    state = admitted.state
    leftovers: list[Change] = []
    box = open_sandbox(project, options, emit)  # refuses here, before anything is changed
    if not options.rehearse:
        notes += rehearsal.check_real_run(project, state, admitted.saved)
    options, dropped = remembered.recall(options, state.remembered)
    notes += [dropped] if dropped else []
    state.remembered = remembered.remember(options)
    if options.reset:
        leftovers = _open_changes(project)
        archived = project.store.archive(now())
        if archived is not None:
            shown = project.shown(archived)
            notes.append(f"reset: the old state and logs are in {shown}")
    notes += [admitted.rebuilt] if admitted.rebuilt else []
    notes += [admitted.agent_note] if admitted.agent_note else []
    notes += _plan_changes(project, admitted, state)
    notes += admitted.found
    agent = make_agent(admitted.agent, options.agent_program, agent_env(options), box)
    agent.check()
    if box is not None:  # the run's first lines say what its agents may do
        notes[:0] = sandbox_notes(box, agent, brief=True)
    notes += preflight(kind, project.root, task_file, asked)
    return options, box, agent, leftovers


def _made_ready(project: Project, state: State, options: RunOptions, vcs: Vcs,
                leftovers: list[Change], lanes: bool) -> list[str]:
    """The working copy made (`vcs.prepare`), what the first agent needs set to get ready as
    the run first waits on git (agentloop.run.ahead; `lanes`: the run's agents work in lanes),
    then the VCS lock held and a reset's leftover changes dropped; their lines."""
    # A run with a task to do gets ready for its first agent while its working copy is made.
    if options.only or any(runnable(t, options.max_attempts, options.include_optional)
                           for t in state.tasks):
        ready_beside(vcs.name if lanes else None)
        proc.after_next_stream(collector.release)  # the start is over: collect as usual
    notes = vcs.prepare()
    notes += start_notes(vcs.name, project.root, options.git_hooks)
    project.store.hold_vcs_lock()  # the repository prepare() may just have made
    # An interrupted attempt of the old state's: history drops it, for good (jj keeps a change
    # for its task's next begin otherwise, and the reset's first task would take it up).
    discard = vcs.discard if isinstance(vcs, Discards) else vcs.abandon
    for change in leftovers:
        set_aside = discard(change)
        notes += [set_aside] if set_aside else []
    return notes


def _wired(project: Project, state: State, name: str, agent: Agent, vcs: Vcs,
           options: RunOptions, emit: Emit, job: FleetJob | None, box: Sandbox | None) -> Run:
    """The run's parts together: its learnings, the retry advisor, the commit-message
    distiller (its module only for a run that asks, loaded while the first agent works:
    agentloop.run.ahead.load_ahead_too)."""
    root = project.root
    learnings = Learnings(project.store.dir, project.task_file_name)
    distiller = None
    if options.distill and name != REHEARSAL:
        load_ahead_too("agentloop.run.distill")
        distiller = partial(_distill, agent, options.distill_model or agent.models.helper,
                            cwd=root)
    return Run(project, state, agent, vcs, options, emit, learnings,
               advisor=partial(_advise, agent, options.retry_model or agent.models.helper,
                               cwd=root),
               distiller=distiller,
               job=job, sandbox=box)


def _distill(agent: Agent, model: str, plain: str, group: str, task: str, final: str,
             diff: str, cwd: Path) -> Message:
    """The commit-message distiller (agentloop.run.distill.distill, with its signature), its
    module loaded where the first task's commit asks it, if the records-ahead thread has not
    loaded it by then: not on the way to the first agent."""
    from agentloop.run import distill

    return distill.distill(agent, model, plain, group, task, final, diff, cwd)


def _advise(agent: Agent, model: str, task: str, attempt: int, max_attempts: int, error: str,
            exit_code: int | None, log_tail: str, cwd: Path, timeout: float = 180,
            previous_error: str | None = None) -> Advice:
    """The retry advisor (agentloop.run.retry.advise, with its signature), its module loaded
    when a failed attempt first asks it: most runs never do."""
    from agentloop.run import retry

    return retry.advise(agent, model, task, attempt, max_attempts, error, exit_code, log_tail,
                        cwd, timeout, previous_error)


def _plan_changes(project: Project, admitted: Admitted, state: State) -> list[str]:
    """What the run says of the plan's edits since the state was saved, the records of the
    tasks they removed kept aside first, and of finished tasks whose words changed."""
    from agentloop.state.reconcile import reworded_lines  # a run's own: not at --status

    notes = took_over(project)
    changes = admitted.changes
    if changes is not None:
        notes.append(changes.note(project.shown(project.task_file)))
        if changes.dropped:
            kept = project.store.keep_removed(list(changes.dropped), now())
            notes.append(f"the records of removed and reworded tasks are kept in "
                         f"{project.shown(kept)}; their cost still counts")
    return notes + reworded_lines(state.tasks, project.shown(project.task_file))


def open_sandbox(project: Project, options: RunOptions,
                 emit: Emit | None = None) -> Sandbox | None:
    """The run's sandbox with --sandbox (checked: SandboxUnavailable where there is none); what
    it does after an agent run (a kept link put back) goes to `emit`, from the agent's lane."""
    if not options.sandbox:
        return None
    from agentloop.sandbox import open_sandbox as opened

    return opened(project.root, project.root / STATE_DIR, options.sandbox_hide,
                  agent_env(options), None if emit is None else partial(_said, emit))


def _said(emit: Emit, line: str) -> None:
    from agentloop.run.lane_tag import LaneNote

    emit(LaneNote(line))


def sandbox_notes(box: Sandbox, agent: Agent, brief: bool = False) -> tuple[str, ...]:
    """What the run's agents may do inside the sandbox (`brief`: in one line), and the agent's
    own layers."""
    said = (box.summary(),) if brief else box.describe()
    return (*said, f"sandbox: the agent's own layers: {own_layers(agent)}")


def sandbox_preview(project: Project, options: RunOptions,
                    agent: str) -> tuple[tuple[str, ...], str | None]:
    """--dry-run: (what the sandbox allows, why the run would refuse it or None)."""
    try:
        box = open_sandbox(project, options)
    except AgentLoopError as exc:
        return (), str(exc)
    if box is None:
        return (), None
    return sandbox_notes(box, make_agent(agent, options.agent_program, agent_env(options))), None


def refuse_unpriced_budget(agent: Agent, options: RunOptions) -> None:
    """A budget that could not be kept, refused before any agent runs: the agent reports
    tokens only and a model it would run has no known price."""
    if options.budget is None and options.task_budget is None:
        return
    models = [options.model or agent.models.task]
    if options.review:
        models.append(options.review_model or agent.models.review)
    unknown = unpriced(agent.reports_cost, models, options.prices)
    if unknown:
        flag = "--budget" if options.budget is not None else "--task-budget"
        raise UsageError(f"{flag} cannot be kept: {agent.name} reports tokens, not dollars, and "
                         f"agent-loop knows no price for {', '.join(unknown)}; give one with "
                         f"--price {unknown[0]}=IN/CACHED/OUT (USD per million tokens, or the "
                         f"`prices` setting), or run without {flag}")


def agent_env(options: RunOptions) -> dict[str, str]:
    """The agent's environment: ours, sealed (agents.environment), with the settings' env."""
    return child_env(os.environ, options.env, options.env_exclude, (EVENT_PREFIX,))


def choose_agent(options: RunOptions, state: State | None) -> str:
    """The agent for this run: a run that began with one agent goes on with it."""
    asked = options.agent_name
    if asked not in AGENTS:
        raise StateError(f"unknown agent {asked!r}: choose one of {', '.join(sorted(AGENTS))}")
    began = state.agent if state is not None else None
    # A rehearsal's state is its own (agentloop.run.rehearsal): neither passes for the other.
    if began is None or began == asked or options.rehearse:
        return asked
    if began == REHEARSAL:
        raise StateError("this plan's state was left by a rehearsal (an older agent-loop kept it "
                         "with the real one), so no agent did its tasks: start the real run "
                         "with --reset")
    if began not in AGENTS:  # a state edited by hand, or left by a newer agent-loop
        if chose_agent(options):   # the user named one: the run goes on with it (unknown_agent)
            return asked
        raise StateError(f"this plan's state names the agent {began!r}, which this agent-loop "
                         f"does not know ({', '.join(sorted(AGENTS))}): go on with one it knows "
                         f"(--agent {DEFAULT_AGENT}), start over with --reset, or fix `agent` "
                         "in the state")
    if options.agent == DEFAULT_AGENT:
        return began
    raise StateError(f"this run began with --agent {began}; go on with it, or start over with "
                     f"--reset --agent {asked} (every task runs again, done ones too)")


def chose_agent(options: RunOptions) -> bool:
    """Whether the user named the agent: `--agent` on the command line (`--agent claude` too,
    which is the default's name), or another agent than the default (a setting)."""
    return options.agent != DEFAULT_AGENT or options.agent_given


def unknown_agent(state: State | None, name: str) -> str | None:
    """The line a run says when its state named an agent this agent-loop does not know and the
    user's `--agent` took its place (choose_agent), else None."""
    began = state.agent if state is not None else None
    if began is None or began in AGENTS:
        return None
    return (f"this plan's state names the agent {began!r}, which this agent-loop does not know: "
            f"the run goes on with {name} (--agent)")


def _open_changes(project: Project) -> list[Change]:
    """Changes of attempts an old state left open (running or interrupted), for --reset."""
    try:
        old = project.store.load()
    except StateError:
        return []
    return [Change(change_id=t.change_id, commit_id=t.commit_id or "")
            for t in (old.tasks if old else [])
            if t.status in (S.RUNNING, S.INTERRUPTED) and t.change_id]


def vcs_kind(asked: str, state: State | None) -> str:
    """The backend for this run: a run that began with one VCS goes on with it."""
    if state is None or state.vcs is None or asked == state.vcs:
        return asked
    if asked == "auto":
        return state.vcs
    # --reset reads no history: said, since the done tasks' agents are paid again.
    raise StateError(f"this run began with --vcs {state.vcs}; go on with it, or start over "
                     f"with --reset --vcs {asked} (every task runs again, done ones too)")
