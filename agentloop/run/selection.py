"""Which session a task continues, and the plan --dry-run shows. Pure functions over the state."""

from __future__ import annotations

from dataclasses import dataclass

from agentloop.state.schema import State, TaskState

DONE = ("completed", "skipped")


def previous_in_group(state: State, task: TaskState) -> TaskState | None:
    """The task run before this one in its group, passing over tasks the author checked off."""
    for earlier in reversed(state.tasks[: task.index - 1]):
        if earlier.group != task.group:
            return None
        if earlier.status != "skipped":
            return earlier
    return None


def resume_session(state: State, task: TaskState) -> str | None:
    """The session a task continues: the newest of its group's earlier tasks that completed
    (or reported itself blocked, or was left unapproved), passing over tasks never run.

    A failed task breaks the chain, so the next task starts fresh.
    """
    for earlier in reversed(state.tasks[: task.index - 1]):
        if earlier.group != task.group or earlier.status == "failed":
            return None
        if earlier.status in ("completed", "blocked", "unapproved"):
            return earlier.session_id
    return None


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


def plan_rows(state: State, max_attempts: int, only: int | None = None,
              again: bool = False, include_optional: bool = False) -> list[PlanRow]:
    """For --dry-run: each task with how it would run (done, new or continued session)."""
    rows = []
    will_run: set[int] = set()
    for task in state.tasks:
        if only is not None and task.index != only:
            rows.append(_row(task, False, f"not asked for (--task {only})"))
            continue
        why = None if (only is not None and (again or runnable(task, max_attempts, True))) \
            else _why_not(task, max_attempts, include_optional)
        if why is not None:
            rows.append(_row(task, False, why))
            continue
        session = resume_session(state, task)
        previous = previous_in_group(state, task)
        if session and not (again and only is not None):
            how = f"resumes session {session}"
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
    if task.status == "completed":
        return "done"
    if task.optional and not include_optional and task.status not in ("skipped",):
        return "optional in the plan (`[ ]*`); --include-optional runs it"
    if task.status == "skipped":
        return "checked off in the task file"
    if exhausted(task, max_attempts):
        return f"failed after {task.attempts} attempts; --task {task.index} --again reruns it"
    if task.status == "blocked":
        return f"blocked ({task.error}); run it with --task {task.index}"
    if task.status == "unapproved":
        return (f"unapproved ({task.error}), its change kept; run it again with "
                f"--task {task.index}")
    return None


def exhausted(task: TaskState, max_attempts: int) -> bool:
    """A failed task that has used up its attempts is not run again (until --reset)."""
    return task.status == "failed" and task.attempts >= max_attempts


def runnable(task: TaskState, max_attempts: int, include_optional: bool = False) -> bool:
    """Whether a plain run takes this task: not done, not used up, not reported blocked, not
    left unapproved by the reviewer (its change is kept for the user to judge), not optional
    unless asked for."""
    return (task.status not in (*DONE, "blocked", "unapproved")
            and not exhausted(task, max_attempts)
            and (include_optional or not task.optional))


def commit_message(task: TaskState) -> str:
    """The description of a task's change."""
    return f"agent-loop: {task.group} / {task.summary}"
