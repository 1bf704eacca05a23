"""The base a run took (the change below its first task, which takes the tool's own files) is
noted in the workspace's `.jj` folder until the run's close drops it when unused. A run killed
before its close leaves that base behind, empty and undescribed in the line of history, and
the next run's first task takes a new one on top: one blank change per kill. The next run's
prepare drops the noted one, when it is still empty, undescribed and no working copy."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.jj.run import Jj

MARK = "agent-loop-base"
# jj's own rule for a change nobody needs (it drops such a @ once @ moves), and one parent,
# so dropping it moves nothing but its children down onto that parent.
UNUSED = ('if(empty && !description && !local_bookmarks && !immutable'
          ' && !current_working_copy && parents.len() == 1, "drop")')


def note(root: Path, change_id: str) -> None:
    """Note `change_id` as the base this run took."""
    try:
        (root / ".jj" / MARK).write_text(change_id)
    except OSError:
        pass  # no note: a kill leaves one blank change, as before


def make_below(jj: Jj, root: Path, change_id: str) -> str:
    """A new empty base made right below `change_id`, and noted; its change id."""
    jj.out("new", "--no-edit", "--insert-before", change_id, "-m", "")
    base = jj.revs(f"{change_id}-")[0].change_id
    note(root, base)
    return base


def drop_unused(jj: Jj, change_id: str) -> bool:
    """Abandon `change_id` when it is an unused base (UNUSED); True when it was."""
    verdict = jj.out("log", "--no-graph", "-r", f"present({change_id}) & ::@", "-T", UNUSED)
    if verdict.strip() != "drop":
        return False
    jj.out("abandon", change_id)
    return True


def drop_left(jj: Jj, root: Path) -> None:
    """Drop the base a killed run noted and left unused, silently, as jj drops such a change
    itself once @ leaves it."""
    mark = root / ".jj" / MARK
    try:
        change_id = mark.read_text().strip()
    except OSError:
        return
    mark.unlink(missing_ok=True)
    if change_id:
        drop_unused(jj, change_id)


def closed(jj: Jj, root: Path, change_id: str) -> None:
    """The run closed: its base `change_id` dropped when it ended up unused under the tasks,
    as jj drops such a change itself once it stops being @ (left in place it would show as a
    blank commit under the first task, in `git log` too when colocated); nothing to note."""
    drop_unused(jj, change_id)
    (root / ".jj" / MARK).unlink(missing_ok=True)
