"""What an agent did to its own lane's git (a lock it left in the lane's git dir, the lane's
`.git` file removed, its worktree pruned or removed, its HEAD switched to another branch), and a
finished agent's work kept from a lane it damaged, for the next run to land without paying the
agent again (agentloop.run.attempt brings it back)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.breach import Breach, Kind, LaneBreach
from agentloop.vcs.git import aside, lane_locks, refs
from agentloop.vcs.git.lane_as_recorded import git_lane_gone
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.lane_state import LaneState
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.git.run import Git


def unlocked(root: Path, dirs: tuple[Path, Path] | None) -> str | None:
    """The locks the agent left in the lane's git dir, removed (lane_locks); the line.
    `dirs`: the lane's own git dir and the common dir, if its `.git` file named them."""
    own = dirs[0] if dirs is not None else refs.worktree_git_dir(root)
    return lane_locks.cleared(root, own)


def standing(root: Path, branch: str, main: GitMainLine, state: LaneState, git: Git,
             finished: bool, dirs: tuple[Path, Path] | None = None) -> None:
    """LaneBreach when the lane's worktree is gone (its agent's `git worktree remove`, or
    `rm .git`) or its registration no longer names the repository (`dirs`, the lane's own git
    dir and the common one, known: its `commondir` rewritten): said as the breach it is,
    before a git command of ours fails in it. `finished`: the step's agent had finished
    (stopped)."""
    gone = git_lane_gone(GitLaneRecord(root, branch, None, main.root, main.ref, dirs=dirs))
    if gone is not None:
        raise stopped(breach=gone, finished=finished, root=root, main=main, state=state,
                      git=git)


# The breaches whose finished agent's work is kept: the lane damaged as its files stand, and
# your branch moved back under a lane left whole (your `git reset --hard` that dropped a task
# it landed): the stop is yours to settle, the agent's work is not to be paid for again.
_KEPT = (Kind.LANE_GONE, Kind.CHECKED_OUT, Kind.LANDED_LOST, Kind.MAIN_REWOUND)


def stopped(breach: Breach, finished: bool, *, root: Path, main: GitMainLine,
            state: LaneState, git: Git) -> LaneBreach:
    """The stop for `breach`. A step whose agent had finished, in a lane whose folder still
    holds its files as it left them (its `.git` removed, or its HEAD switched to another
    branch at the same commit, or still on its own with your branch moved back under it):
    that work kept aside from the folder, for the next run to
    land without paying the agent again. A folder that is gone took the work with it: said,
    since the next run pays the agent again."""
    record = state.record
    if breach.kind is Kind.LANE_GONE and not root.is_dir():
        return LaneBreach(dataclasses.replace(breach, line=(
            f"{breach.line}; the agent's work went with the lane's folder, so the task's "
            "agent runs again on the next run")))
    if not finished or record is None or not record.head or breach.kind not in _KEPT:
        return LaneBreach(breach)
    try:
        if breach.kind is not Kind.LANE_GONE and git.sha("HEAD") != record.head:
            return LaneBreach(breach)  # its files are another commit's: not the task's
        kept = aside.keep_folder(main.common_dir, root, record.head,
                                 "the finished work of a lane its agent damaged")
    except (VcsError, OSError):
        return LaneBreach(breach)  # the stop says what happened; the work stays there
    if kept is None:
        return LaneBreach(breach)
    line = aside.said_finished(kept, main.root)
    return LaneBreach(dataclasses.replace(breach, line=f"{breach.line}; {line}"), line)
