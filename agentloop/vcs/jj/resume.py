"""A task that goes on in the change an earlier run's attempt of it left, instead of starting
afresh on top of it (Change.kept), which would pay for the work twice and, where the agent's
rewrite of its files then changes nothing, read "changed no files" with the work beside the
line. Two such changes: one whose agent ran `jj commit` or `jj new` (the backend's abandon
keeps it for the task's next begin; base_below gives it a base), and a lane's @ that is the
task's own change, dropped when its run stopped and back since (left_as). Either stays the
earlier run's change: not begun by this run (JjVcs.began)."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.jj import basemark
from agentloop.vcs.jj.run import Jj, Rev


def left_as(jj: Jj, message: str) -> Rev | None:
    """@ when it is the task's own change, described with its `message` by an earlier run's
    begin: dropped when that run stopped, and back since (`jj undo`, `jj op restore`), its
    agent's files in it. None when @ is another change."""
    wc = jj.revs("@")[0]
    if not wc.described or jj.description(wc.change_id).strip() != message.strip():
        return None
    return wc


def left_as_note(change_id: str) -> str:
    """What the user is told when the task goes on in a change left_as found."""
    return (f"goes on in its change {change_id[:12]}, which the last run dropped when it "
            "stopped and is back (`jj undo`?), with the work done in it then")


def base_below(jj: Jj, root: Path, task: Rev) -> str:
    """The base for a kept change taken up again, noted: it takes the tool's files that the
    agent's own `jj` call tracked (the task file). A new empty change right below the task's,
    never its parent, which may be a task's change (landed even); dropped at close if nothing
    went into it. One an earlier resume of this change put there (and was killed before it was
    dropped) serves again: a kill at every re-run piles no empty changes up."""
    below = jj.revs(f"{task.change_id}- & mutable() & empty()")
    if len(below) != 1 or below[0].described or len(task.parents) != 1:
        return basemark.make_below(jj, root, task.change_id)
    basemark.note(root, below[0].change_id)
    return below[0].change_id
