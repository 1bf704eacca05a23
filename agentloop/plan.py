"""Which session a task continues, and the plan --dry-run shows. Pure functions over the state."""

from __future__ import annotations

from agentloop.state import State, TaskState

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


def session_plan(state: State, max_attempts: int) -> list[tuple[TaskState, str]]:
    """For --dry-run: each task with how it would run (done, new or continued session)."""
    plan = []
    will_run: set[int] = set()
    for task in state.tasks:
        if task.status == "completed":
            plan.append((task, "done"))
            continue
        if task.status == "skipped":
            plan.append((task, "skipped (checked off in the task file)"))
            continue
        if exhausted(task, max_attempts):
            plan.append((task, f"failed after {task.attempts} attempts; not run again"))
            continue
        if task.status == "blocked":
            plan.append((task, f"blocked ({task.error}); run it with --task {task.index}"))
            continue
        if task.status == "unapproved":
            plan.append((task, f"unapproved ({task.error}), its change kept; run it again "
                               f"with --task {task.index}"))
            continue
        session = resume_session(state, task)
        previous = previous_in_group(state, task)
        if session:
            how = f"resumes session {session}"
        elif previous is not None and previous.index in will_run:
            how = "continues the group's session"
        else:
            how = "starts a fresh session"
        will_run.add(task.index)
        plan.append((task, how))
    return plan


def exhausted(task: TaskState, max_attempts: int) -> bool:
    """A failed task that has used up its attempts is not run again (until --reset)."""
    return task.status == "failed" and task.attempts >= max_attempts


def runnable(task: TaskState, max_attempts: int) -> bool:
    """Whether a plain run takes this task: not done, not used up, not reported blocked, not
    left unapproved by the reviewer (its change is kept for the user to judge)."""
    return (task.status not in (*DONE, "blocked", "unapproved")
            and not exhausted(task, max_attempts))


def commit_message(task: TaskState) -> str:
    """The description of a task's change."""
    return f"agent-loop: {task.group} / {task.summary}"
