"""What a killed run, or a killed jj command, left in a jj working copy, put right before any
agent runs: git's HEAD moved by a jj cut short in its export (agentloop.vcs.jj.cutshort), a
working copy jj calls stale, empty changes a run began and never used, and the base a run noted
and never used (agentloop.vcs.jj.basemark). What a killed attempt's agent recorded is not here:
the backend's abandon keeps that for the task's next begin."""

from __future__ import annotations

from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.jj import basemark
from agentloop.vcs.jj.cutshort import undo_cut_short_export
from agentloop.vcs.jj.run import STALE, Jj

# A change begin described as a task's that nothing went into: a run stopped or killed right
# after that `jj describe`/`jj new`, before its record named the change. No task of ours ends
# empty (finish drops an empty one), so such a change is always a leftover.
BEGUN = 'empty() & mutable() & description(glob:"agent-loop:*")'

# How `jj workspace update-stale` says that files changed after the operation a killed command
# left (jj refuses to work on that working copy until then: run.STALE).
CONCURRENT = "Concurrent modification detected"


def put_right(root: Path, jj: Jj) -> list[str]:
    """Undo or finish what a killed run or jj command left in the working copy at `root`; a
    note for each thing done that the user would want to know of."""
    notes = []
    if (root / ".git").is_dir():  # before a snapshot takes a moved HEAD in
        undone = undo_cut_short_export(root, jj)
        notes += [undone] if undone else []
    try:
        notes += drop_strays(jj)
    except VcsError as exc:
        if STALE not in str(exc):
            raise
        notes.append(update_stale(jj))
        notes += drop_strays(jj)
    basemark.drop_left(jj, root)
    return notes


def update_stale(jj: Jj) -> str:
    """Finish what a killed jj command left undone: its operation was recorded, the files
    not yet written ("The working copy is stale"), and every command refuses until they
    are. Run before any agent. Files that differ from what jj last recorded (the killed
    command's own snapshot, or someone's edits since) are kept by jj in a change of their
    own, which the note names: jj cannot tell the two apart, and neither can we."""
    done = jj.run("workspace", "update-stale")  # what it did is said on stderr
    note = ("brought the working copy up to date after a jj command that was killed "
            "(`jj workspace update-stale`)")
    if CONCURRENT in done.stdout + done.stderr:
        note += ("; files that differed from jj's last record were kept in a change of "
                 "their own (`jj log` shows it, `jj restore --from <it>` brings them back)")
    return note


def drop_strays(jj: Jj) -> list[str]:
    """Abandon empty changes an earlier run made and was killed before it used.

    A kill between `jj new -m` and the runner's state save leaves such a change; no task
    of ours ends empty (finish abandons an empty one), so an empty `agent-loop:` change
    below @ that can still be rewritten is always a leftover. So is an empty, undescribed
    change right on a task's change with more above it: finish's fresh @, which a run that
    recovered the sealed task below took as its base, killed before close dropped it
    (jj itself drops such a change once it stops being @).
    """
    strays = ('empty() & mutable() & ::@ & ~root() & (description(glob:"agent-loop:*") | '
              '(description(exact:"") & ~@ & ~bookmarks() & '
              'children(description(glob:"agent-loop:*"))))')
    found = jj.ids(strays)
    if not found:
        return []
    jj.out("abandon", strays)
    return [f"dropped {len(found)} empty change(s) a killed run had begun"]
