"""Keeping a copy before a roll-back in jj: what an abandoned attempt's change holds (the agent's
edits, and the user's own made while it worked, which jj snapshotted into it just the same) is
first copied into a change of its own beside the line of history, never below @, so `jj log`
shows it and one `jj squash` brings it back. `jj op log` alone is no place to leave paid work."""

from __future__ import annotations

import re

from agentloop.errors import VcsError
from agentloop.vcs.jj.lane_check import operation
from agentloop.vcs.jj.run import Jj, Rev

# How a kept change is described: never "agent-loop:", which names a task's change.
KEPT = "rolled back by agent-loop"
# The trailer a finished agent's kept work names the task's change it came from by
# (keep_finished): a run killed before it recorded the stop leaves only that change in its
# records, and the next run finds the work by it (kept_finished).
FROM = "Agent-Loop-Kept-From:"


def keep_aside(jj: Jj, task: Rev, tip: str, message: str | None, named: bool = False
               ) -> str | None:
    """Copy what `task` and the changes from it up to `tip` hold into a new change on `task`'s
    parents, off the line; the line that says so, or None when they hold nothing. `named`:
    its description names `task`'s change (FROM)."""
    if task.empty and tip == task.change_id:
        return None
    if message is None:  # an earlier run's change: its description says which task
        message = jj.description(task.change_id)
    subject = message.split("\n", 1)[0].removeprefix("agent-loop:").strip()
    said = f"{KEPT}: {subject or 'an attempt'}" + \
        (f"\n\n{FROM} {task.change_id}" if named else "")
    told = jj.told("new", "--no-edit", *task.parents, "-m", said)
    if not told:  # a report we cannot read: the newest child of those parents is the one
        told = _newest(jj, task)
    kept = told[0].change_id
    jj.out("restore", "--from", tip, "--into", kept)
    rev = jj.revs(kept)[0]
    if rev.empty:
        jj.out("abandon", kept)
        return None
    return (f"rolled back the attempt's change {task.change_id[:12]} ({len(rev.files)} "
            f"file(s)); kept in change {kept[:12]} beside the line, `jj squash "
            f"--use-destination-message --from {kept[:12]} --into @` brings it back")


def keep_finished(jj: Jj, change_id: str, message: str) -> str | None:
    """A finished agent's work in the task's change `change_id` (its lane's files snapshotted
    by the first command here) kept aside as keep_aside keeps it, for a run stopped before it
    landed, and that change emptied; the line, naming the kept commit as well: the repair the
    stop prints (`jj op restore` to before the stop) hides the kept change again, its commit
    stays in the store and bring_back takes the work from there. None when there is nothing
    to keep."""
    task = jj.revs(change_id)
    said = keep_aside(jj, task[0], change_id, message, named=True) if len(task) == 1 else None
    # The change its line names, not the newest kept one beside the line: a killed run may
    # have left an older one there.
    named = _SAID.search(said) if said else None
    kept = jj.revs(named.group(1)) if named else []
    if not kept:
        return None
    # The task's change rolled back, as an abandoned attempt's is: the next run finds it empty
    # and drops it, and lands the kept work once, whether or not you take the stop's repair.
    jj.out("restore", "--changes-in", change_id)
    return _finished_line(kept[0])


def kept_finished(jj: Jj, change_id: str) -> str | None:
    """keep_finished's line for the task's change `change_id`, for a run killed before it
    recorded it (its records name the change, the attempt open); None when no kept change
    names it. A kill before that change was emptied left the work in both: the copy is
    dropped, the change kept aside as any killed attempt's (one copy, brought back once)."""
    kept = jj.revs(f'latest(description(substring:"{FROM} {change_id}"))')
    if not kept:
        return None
    task = jj.revs(f"present({change_id})")
    if task and not task[0].empty:
        jj.out("abandon", kept[0].change_id)
        return None
    return _finished_line(kept[0])


def _finished_line(kept: Rev) -> str:
    return (f"the finished agent's work is kept in change {kept.change_id[:12]} "
            f"(commit {kept.commit_id[:12]}) beside the line: the next run lands it "
            "without running the task's agent again")


def bring_back(jj: Jj, line: str) -> bool:
    """Squash the change a line of keep_aside names into @ (the task's change): whether it
    went in whole. A squash that conflicts (the line moved under the kept work since) exits 0
    in jj with the conflict stored in @: it is undone, and False says the agent must work.
    A line of keep_finished names the kept commit too: taken from there when the change is
    no longer visible (a `jj op restore` to before it hid it; jj squashes from a hidden
    commit, named by its id)."""
    named = _SAID.search(line)
    if named is None:
        return False
    source = named.group(1)
    if named.group(2) and not jj.ids(f"present({source})"):
        source = named.group(2)
    before = operation(jj)
    try:
        jj.out("squash", "--use-destination-message", "--from", source, "--into", "@")
    except VcsError:
        return False
    if jj.ids("conflicts() & @"):
        jj.out("op", "restore", before)
        return False
    return True


_SAID = re.compile(r"kept in change ([k-z]{7,64}) (?:\(commit ([0-9a-f]{7,64})\) )?")


def _newest(jj: Jj, task: Rev) -> list[Rev]:
    parents = " | ".join(task.parents) or "root()"
    return jj.revs(f'latest(children({parents}) & description(substring:"{KEPT}"))')
