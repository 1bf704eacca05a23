"""A rehearsal stays a rehearsal: its state is its own (`<plan folder>/rehearsal/`, started afresh
each time), and its changes go to a working copy of its own (a git worktree on branch
`agent-loop/rehearsal-…`, or a jj workspace; agentloop.vcs.private_copy), so the user's branch,
working tree and the plan's real progress are left exactly as they were.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agentloop.plan import parse
from agentloop.state.project import Project, rehearsal_of
from agentloop.state.schema import State
from agentloop.vcs import relative_to


def lane_name(project: Project) -> str:
    """The rehearsal's working copy's name: one per plan and checkout. Its branch (jj: its
    workspace name) is the repository's, shared by every checkout: a linked checkout's
    (agentloop.vcs.lanes.linked_checkout) carries that checkout's name after a dot, which no
    slug holds, so a rehearsal there never moves the one the main checkout keeps."""
    from agentloop.vcs.lanes import linked_checkout

    checkout = linked_checkout(project.root)
    name = _released_name(project)
    return f"{name}.{parse.slug(checkout, 20) or 'checkout'}" if checkout else name


def _released_name(project: Project) -> str:
    # The name every checkout's rehearsal had up to 0.1.0, the main checkout's still.
    return "rehearsal-" + (parse.slug(project.task_file_name, 30) or "plan")


def _left_by_released(project: Project) -> str:
    """The rehearsal lane the released version left in this linked checkout (git: its lanes
    folder holds it on its branch, the main checkout's name), which this checkout's rehearsal
    takes up; "" when there is none."""
    from agentloop.vcs.lanes import lane_on_branch

    name, old = lane_name(project), _released_name(project)
    return old if name != old and lane_on_branch(project.root, old) else ""


def working_copy(project: Project) -> Path:
    """Where the plan's rehearsal works: a git worktree or jj workspace of its own (the
    released version's in a linked checkout, until this one's next rehearsal takes it up)."""
    from agentloop.vcs.lanes import lanes_dir

    return lanes_dir(project.root) / _current_name(project)


def _current_name(project: Project) -> str:
    from agentloop.vcs.lanes import lanes_dir

    name = lane_name(project)
    if (lanes_dir(project.root) / name).is_dir():
        return name
    return _left_by_released(project) or name


def copy_name(project: Project, kind: str) -> str:
    """The rehearsal's working copy as its VCS names it: `branch …` (git), `jj workspace …`."""
    from agentloop.vcs.lanes import BRANCH_PREFIX, JJ_PREFIX

    name = _current_name(project)
    return f"branch {BRANCH_PREFIX}{name}" if kind == "git" else f"jj workspace {JJ_PREFIX}{name}"


def where_changes_are(project: Project, kind: str) -> tuple[Project | None, str]:
    """For --status of a rehearsal: the project whose history holds its changes (None when its
    working copy is gone), and a line that says where they are. They are never on the user's
    branch: a rehearsal works in a copy of its own by design."""
    copy = working_copy(project)
    if not copy.is_dir():
        return None, (f"rehearsal: its working copy {project.shown(copy)} is gone; its changes "
                      f"were on {copy_name(project, kind)}, never on your branch")
    return replace(project, root=copy), (
        f"rehearsal: its changes are on {copy_name(project, kind)}, in {project.shown(copy)}, "
        "not on your branch (a rehearsal never touches it)")


def prepare(project: Project, asked_vcs: str, copy: tuple[str, ...] = (),
            link: tuple[str, ...] = ()) -> tuple[Project, str, Path, list[str]]:
    """Start the rehearsal afresh: the project it works in (its root the new working copy, its
    store the rehearsal's), the VCS kind, the task file as that copy has it, and notes. `copy`
    and `link` (--lane-copy, --lane-link) furnish its working copy as they do a lane: what a
    real run's agents and hooks find there (husky's `.husky/_`), the rehearsal finds too."""
    import shutil  # as private_copy: a rehearsal's only

    from agentloop.vcs import private_copy  # a rehearsal's only: real runs never load it

    kind = private_copy.kind_of(project.root, asked_vcs)
    # Its own folder, whatever the last rehearsal left there: a rehearsal is cheap to redo.
    shutil.rmtree(project.store.dir, ignore_errors=True)
    lane = private_copy.open_lane(project.root, lane_name(project), kind,
                                  _left_by_released(project) if kind == "git" else "")
    brought: list[str] = []
    if copy or link:
        from agentloop.vcs.furnish import furnish

        brought = furnish(project.root, lane.path, copy, link)
    where = project.shown(lane.path)
    rehearsed = replace(project, root=lane.path)
    rel = relative_to(project.task_file, project.root)
    task_file = lane.path / rel if rel else project.task_file
    what = f"branch {lane.branch}" if kind == "git" else f"jj workspace {lane.branch}"
    return rehearsed, kind, task_file, [
        f"rehearsal: in a working copy of its own, {where} ({what}); your branch and files "
        "stay as they are, and its state is its own", *brought]


def check_real_run(project: Project, state: State, saved: bool) -> list[str]:
    """A real run after a rehearsal says the rehearsal's progress is apart (an older
    agent-loop's rehearsal, kept in the real state, is refused by run.start.choose_agent)."""
    rehearsed = rehearsal_of(project).store.state_path
    if not saved and rehearsed.exists():
        return [f"the rehearsal's state ({project.shown(rehearsed.parent)}) is "
                "separate: this real run starts from the plan itself"]
    return []
