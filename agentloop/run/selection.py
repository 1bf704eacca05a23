"""Which tasks a run takes (--task, --group), which session a task continues, and the plan
--dry-run shows. Pure functions over the state."""

from __future__ import annotations

from collections.abc import Iterator

from agentloop.errors import StateError
from agentloop.ondemand import dataclass
from agentloop.options.record import RunOptions, task_numbers
from agentloop.plan import groups
from agentloop.state.landed import commit_message as commit_message  # where history reads it
from agentloop.state.landed import filed_under as filed_under
from agentloop.state.schema import State, TaskState
from agentloop.state.status import FINISHED, SETTLING
from agentloop.state.status import TaskStatus as S


def previous_in_group(state: State, task: TaskState, over: frozenset[int] | set[int] = frozenset()
                      ) -> TaskState | None:
    """The task run before this one in its group, passing over tasks the author checked off
    and those in `over` (optional ones the run leaves, which no session goes through)."""
    for earlier in reversed(state.tasks[: task.index - 1]):
        if earlier.group != task.group:
            return None
        if earlier.status != S.SKIPPED and earlier.index not in over:
            return earlier
    return None


def shown_session(session: str | None) -> str:
    """A session id as a line shows it: 8 characters that tell it apart (the logs and
    --status --json keep it whole). A time-ordered UUID (version 6 or 7: Codex's threads)
    begins with its time, alike for every thread begun within a minute or so, so its last 8,
    random, characters are shown."""
    if not session:
        return "-"
    timed = len(session) == 36 and session[8] == "-" and session[14] in "67"
    return session[-8:] if timed else session[:8]


def session_workdir(state: State, session_id: str) -> str | None:
    """Where a session's newest developer run worked (None: not recorded, an older state)."""
    for earlier in reversed(state.tasks):
        for attempt in reversed(earlier.history):
            if attempt.session_id == session_id and attempt.role == "developer":
                return attempt.workdir
    return None


# A task in one of these is continued by the next task of its group (landing: done, its commit on
# its way to the branch beside that task's agent).
_CONTINUED = (S.COMPLETED, S.BLOCKED, S.UNAPPROVED, S.LANDING)


def resume_session(state: State, task: TaskState) -> str | None:
    """The session a task continues: the newest of its group's earlier tasks that completed
    (or reported itself blocked, or was left unapproved), passing over tasks never run.

    A failed task breaks the chain, so the next task starts fresh. Looked for from the task
    back, as far as the task it continues (the one before it, as a run goes): asked before
    every task, a pass from the plan's start made each task of a long plan dearer than the
    one before. The same session as _continued's pass.
    """
    tasks = state.tasks
    for at in range(task.index - 2, -1, -1):  # no copy of the plan's records before it
        earlier = tasks[at]
        if earlier.group != task.group or earlier.status == S.FAILED:
            return None
        if earlier.status in _CONTINUED:
            return earlier.session_id
    return None


def _continued(tasks: list[TaskState]) -> Iterator[str | None]:
    """For each of `tasks` in plan order, the session it continues (resume_session), in one
    pass: --dry-run asks it of every task, and a look back from each through every pending
    one took minutes for a plan of thousands."""
    group: object = _continued   # no group's name
    session = None
    for task in tasks:
        if task.group != group:
            group, session = task.group, None
        yield session
        if task.status == S.FAILED:
            session = None
        elif task.status in _CONTINUED:
            session = task.session_id


@dataclass(frozen=True)
class PlanRow:
    """One task as --dry-run shows it: whether this run would run it, and how or why not."""

    index: int
    group: str
    summary: str
    text: str           # the task as the agent gets it
    status: str
    runs: bool
    how: str            # the session it would use, or why it does not run
    checks: tuple[str, ...] = ()   # the checks that decide whether it is done


def select(state: State, options: RunOptions, landed: frozenset[int] = frozenset()
           ) -> tuple[int, ...]:
    """The tasks --task or --group name (checked: each exists and can run, or is asked to run
    --again), or () for a plain run of every runnable task. The same for --dry-run. `landed`:
    tasks whose commits the history holds though the state does not say so (a fleet job's
    fresh clone, where other jobs did them)."""
    if options.group is not None:
        chosen = _group(state, options)
        if not options.ignore_deps:
            _refuse_unmet(state, state.tasks[chosen[0] - 1].group, landed)
        return _with_settling(state, chosen)
    chosen = task_numbers(options.task)
    for index in chosen:
        check_single(state, index, options.max_attempts, options.again)
    return _with_settling(state, chosen) if chosen else chosen


def _with_settling(state: State, chosen: tuple[int, ...]) -> tuple[int, ...]:
    """`chosen` and the tasks still landing (held, conflicted) before a chosen task of their
    group: landed first, so the branch keeps the plan's order."""
    last: dict[str, int] = {}
    for index in chosen:
        group = state.tasks[index - 1].group
        last[group] = max(last.get(group, 0), index)
    extra = {t.index for t in state.tasks
             if t.status in SETTLING and t.index < last.get(t.group, 0)}
    return tuple(sorted(set(chosen) | extra))


def _group(state: State, options: RunOptions) -> tuple[int, ...]:
    """--group G: its tasks a plain run would take; with --again, every one not checked off."""
    name = groups.find([t.group for t in state.tasks], options.group or "")
    number = groups.in_order([t.group for t in state.tasks]).index(name) + 1
    members = [t for t in state.tasks if t.group == name]
    if options.again:
        chosen = [t for t in members if t.status != S.SKIPPED
                  and (options.include_optional or not t.optional)]
    else:
        chosen = [t for t in members
                  if runnable(t, options.max_attempts, options.include_optional)]
    if not chosen:
        raise StateError(f"group {number} ({name}) has no task left to run; --group {number} "
                         "--again runs its tasks once more")
    return tuple(t.index for t in chosen)


def unmet(state: State, group: str, landed: frozenset[int] = frozenset()) -> list[str]:
    """The groups `group` waits for (`Depends on:`) that are not done: some task of theirs is
    neither finished in the state nor landed in the history."""
    return [g for g in state.depends.get(group, ())
            if any(t.group == g and t.status not in FINISHED and t.index not in landed
                   for t in state.tasks)]


def _refuse_unmet(state: State, group: str, landed: frozenset[int]) -> None:
    waits = unmet(state, group, landed)
    if waits:
        raise StateError(f"group {group!r} waits for {', '.join(repr(g) for g in waits)}, "
                         "which is not done yet (Depends on:); run that first, or add "
                         "--ignore-deps to start it anyway")


def check_single(state: State, index: int, max_attempts: int, again_: bool) -> None:
    """--task N: N must exist and still be runnable (or be asked for --again)."""
    if index > len(state.tasks):
        raise StateError(f"there is no task {index}: the task file has {len(state.tasks)}")
    task = state.tasks[index - 1]
    if again_:
        if task.status in (S.RUNNING, S.INTERRUPTED, S.PENDING):
            raise StateError(f"task {index} is {task.status}; run it with --task {index} "
                             "(without --again)")
        return
    if task.status in (S.COMPLETED, S.SKIPPED):
        raise StateError(f"task {index} is {task.status} already; --task {index} --again runs "
                         "it once more in a new change")
    if exhausted(task, max_attempts):
        raise StateError(f"task {index} used all its {task.attempts} attempts; "
                         f"--task {index} --again gives it new ones")


def plan_rows(state: State, max_attempts: int, only: tuple[int, ...] = (),
              again: bool = False, include_optional: bool = False) -> list[PlanRow]:
    """For --dry-run: each task with how it would run (done, new or continued session)."""
    rows = []
    will_run: set[int] = set()
    left: set[int] = set()   # optional tasks this run leaves
    sessions = list(_continued(state.tasks))
    for task in state.tasks:
        if only and task.index not in only:
            rows.append(_row(task, False, "not selected"))
            continue
        # A selected task runs: select() refused any that cannot (as the run does).
        why = None if only else _why_not(task, max_attempts, include_optional)
        if why is not None:
            if task.optional and not include_optional:
                left.add(task.index)
            rows.append(_row(task, False, why))
            continue
        if task.status in SETTLING:
            will_run.add(task.index)
            rows.append(_row(task, True, "lands its finished change first (no agent)"))
            continue
        session = sessions[task.index - 1]
        previous = previous_in_group(state, task, left)
        if session and not (again and only):
            how = f"resumes session {shown_session(session)}"
        elif previous is not None and previous.index in will_run:
            how = "continues the group's session"
        else:
            how = "starts a fresh session"
        will_run.add(task.index)
        rows.append(_row(task, True, how))
    return rows


def _row(task: TaskState, runs: bool, how: str) -> PlanRow:
    return PlanRow(task.index, task.group, task.summary, task.task, task.status, runs, how)


def _why_not(task: TaskState, max_attempts: int, include_optional: bool = False) -> str | None:
    """Why a plain run passes over this task, or None when it runs it."""
    if task.status in SETTLING:
        return None  # lands without an agent, optional or not
    if task.status == S.COMPLETED:
        return "done"
    if task.optional and not include_optional and task.status not in (S.SKIPPED,):
        return "optional in the plan (`[ ]*`); --include-optional runs it"
    if task.status == S.SKIPPED:
        return "checked off in the task file"
    if exhausted(task, max_attempts):
        return f"failed after {task.attempts} attempts; --task {task.index} --again reruns it"
    if task.status == S.BLOCKED:
        return f"blocked ({task.error}); run it with --task {task.index}"
    if task.status == S.UNAPPROVED:
        return (f"unapproved ({task.error}), its change kept; run it again with "
                f"--task {task.index}")
    return None


def exhausted(task: TaskState, max_attempts: int) -> bool:
    """A failed task that has used up its attempts is not run again (until --reset)."""
    return task.status == S.FAILED and task.attempts >= max_attempts


def runnable(task: TaskState, max_attempts: int, include_optional: bool = False) -> bool:
    """Whether a plain run takes this task: not done, not used up, not reported blocked, not
    left unapproved by the reviewer (its change is kept for the user to judge), not optional
    unless asked for."""
    if task.status in SETTLING:
        return True  # lands without an agent, optional or not
    return (task.status not in (*FINISHED, S.BLOCKED, S.UNAPPROVED)
            and not exhausted(task, max_attempts)
            and (include_optional or not task.optional))
