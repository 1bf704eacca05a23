"""Progress that survives the loss of `.agent-loop/`: each task's commit names its plan and task
in trailers, and a run that finds no state reads what is done back from the history it builds on
(agentloop.state.landed), saying so in one line, so it never pays for a finished task again."""

from __future__ import annotations

from pathlib import Path

from agentloop.run.selection import commit_message
from agentloop.state.landed import Commit, PlannedTask, done_tasks, trailers
from agentloop.state.project import Project
from agentloop.state.schema import State, TaskState
from agentloop.vcs.branch_log import branch_history
from agentloop.vcs.carry import plan_slug


def task_trailers(project: Project, task: TaskState) -> str:
    """`Agent-Loop-Plan` and `Agent-Loop-Task` for a task's commit or change description."""
    return trailers(plan_slug(project.task_file_name), task.index, task.task)


def history_kind(asked: str, root: Path) -> str:
    """Whose history to read: the VCS asked for, or for `auto` the repository's own kind."""
    if asked != "auto":
        return asked
    return "jj" if (root / ".jj").is_dir() else "git" if (root / ".git").exists() else "none"


def from_history(project: Project, state: State, vcs: str) -> str | None:
    """Mark done the tasks whose change is in the history (a fresh state only); the one line
    that says so, or None when history names none."""
    history = branch_history(history_kind(vcs, project.root), project.root)
    if not history:
        return None
    planned = [PlannedTask(t.index, t.task, commit_message(t, state.title)) for t in state.tasks]
    commits = [Commit(commit, description) for commit, _, description in history]
    landed = done_tasks(plan_slug(project.task_file_name), planned, commits)
    if not landed:
        return None
    change_of = {commit: change for commit, change, _ in history}
    for index, commit in landed.items():
        task = state.tasks[index - 1]
        if task.status == "pending":
            task.status, task.change_id, task.commit_id = "completed", change_of[commit], commit
    return (f"no state for this plan: {len(landed)} task(s) found done in the history this run "
            f"builds on (their commits name them); they are not run again (--again N runs one)")
