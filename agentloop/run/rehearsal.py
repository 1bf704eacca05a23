"""A rehearsal stays a rehearsal: its state is its own (`<plan folder>/rehearsal/`, started afresh
each time), and its changes go to a working copy of its own (a git worktree on branch
`agent-loop/rehearsal-…`, or a jj workspace; agentloop.vcs.private_copy), so the user's branch,
working tree and the plan's real progress are left exactly as they were.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from agentloop.plan import parse
from agentloop.state.project import Project, rehearsal_of
from agentloop.state.schema import State
from agentloop.vcs import relative_to


def lane_name(project: Project) -> str:
    """The rehearsal's working copy's name: one per plan."""
    return "rehearsal-" + (parse.slug(project.task_file_name, 30) or "plan")


def prepare(project: Project, asked_vcs: str) -> tuple[Project, str, Path, list[str]]:
    """Start the rehearsal afresh: the project it works in (its root the new working copy, its
    store the rehearsal's), the VCS kind, the task file as that copy has it, and notes."""
    from agentloop.vcs import private_copy  # a rehearsal's only: real runs never load it

    kind = private_copy.kind_of(project.root, asked_vcs)
    # Its own folder, whatever the last rehearsal left there: a rehearsal is cheap to redo.
    shutil.rmtree(project.store.dir, ignore_errors=True)
    lane = private_copy.open_lane(project.root, lane_name(project), kind)
    where = project.shown(lane.path)
    copy = replace(project, root=lane.path)
    rel = relative_to(project.task_file, project.root)
    task_file = lane.path / rel if rel else project.task_file
    what = f"branch {lane.branch}" if kind == "git" else f"jj workspace {lane.branch}"
    return copy, kind, task_file, [
        f"rehearsal: in a working copy of its own, {where} ({what}); your branch and files "
        "stay as they are, and its state is its own"]


def check_real_run(project: Project, state: State, saved: bool) -> list[str]:
    """A real run after a rehearsal says the rehearsal's progress is apart (an older
    agent-loop's rehearsal, kept in the real state, is refused by run.start.choose_agent)."""
    rehearsed = rehearsal_of(project).store.state_path
    if not saved and rehearsed.exists():
        return [f"the rehearsal's state ({project.shown(rehearsed.parent)}) is "
                "separate: this real run starts from the plan itself"]
    return []
