"""An agent that moved jj's working copy, @, off its task's change. jj snapshots the files on disk
into whatever change @ is, so where the agent left @ decides where its edits are:

* on top of the task's change (the agent ran `jj new` or `jj commit`): the changes from the
  task's up to @ are squashed back into it (fold);
* in a lane, onto a change that was there when the task began (`jj edit @-`, a task landed
  before, under your checkout's @): park gives it a new empty @ before our first jj command
  snapshots the lane, and gather moves the agent's edits into the task's change and puts the
  change it moved to back as it was at the begin;
* anywhere else (in your checkout, where such a change may be yours; a change the agent made):
  the task stops with a line that says so.

The backend's finish asks gather when `jj commit` sealed a change that is not the task's, or
park found @ off it; its abandon asks put_back when park found @ off it (the attempt's edits
then go with the attempt, the change it moved to stays as it was); where and on_top tell where
@ is, for the backend's other steps too.
"""

from __future__ import annotations

from agentloop.errors import VcsError
from agentloop.ondemand import dataclass
from agentloop.vcs.jj.lane_check import operation
from agentloop.vcs.jj.run import Jj, Rev, fileset, op_id
from agentloop.vcs.protocol import Change


def where(jj: Jj, change_id: str) -> tuple[Rev | None, Rev | None]:
    """The task's revision (None when gone) and the working copy's, when @ is not it."""
    revs = jj.revs(f"present({change_id}) | @")
    task = next((r for r in revs if r.change_id == change_id), None)
    wc = next((r for r in revs if r.is_wc and r is not task), None)
    return task, wc


def on_top(jj: Jj, task: Rev) -> bool:
    """Whether @ descends from the task's change (the agent ran `jj new` or `jj commit`)."""
    return bool(jj.ids(f"{task.change_id}:: & @"))


def fold(jj: Jj, task: Rev, message: str, checked: bool = False) -> Rev:
    """The agent ran `jj new`/`jj commit` itself: squash its changes back into the task's
    (`checked`: @ is known to descend from it); the task's change then."""
    if not checked and not on_top(jj, task):
        raise _moved_off(task)
    jj.out("squash", "--from", f"{task.change_id}..@", "--into", task.change_id, "-m", message)
    return jj.revs(task.change_id)[0]


def begun_at(jj: Jj, lane: bool) -> str | None:
    """The operation a lane's task begins at, which park and gather look back to: read off the
    op heads' file, or asked of jj while lanes' operations are being merged; None in your
    checkout, where nothing is parked or put back."""
    return operation(jj) if lane else None


def park(jj: Jj, change: Change, begun: str | None) -> str:
    """Before the first jj command after a lane's agent, which snapshots the lane's files:
    when the agent moved @ off its task's change (`jj edit @-`), a new empty @ on the change
    it moved to, made without a snapshot; its change id ("" when none was made). jj recorded
    the files on disk as that change's, so the snapshot takes the agent's edits into the new
    change (gather moves them into the task's), not into that one: a task landed before,
    under your checkout's @, whose rewrite would leave your checkout stale. No process unless
    a jj command ran since the task began at operation `begun` (None: not in a lane)."""
    if not change.change_id or begun is None or op_id(jj.root) == begun:
        return ""
    # The task's change, when it is there and @ is not on it or on top of it. Gone (you
    # abandoned it while the agent worked): said before any commit of ours, which would seal
    # the agent's later files as the task and have to be undone by an operation revert,
    # which another lane's check takes for an agent's (agentloop.vcs.jj.lane_check).
    out = jj.out("--ignore-working-copy", "log", "--no-graph", "-r",
                 f"present({change.change_id}) | @", "-T",
                 'change_id ++ if(self.contained_in("::@"), " below") ++ "\\n"')
    task = next((line for line in out.splitlines()
                 if line.split(" ")[0] == change.change_id), None)
    if task is None:
        raise _gone(change)
    if task.endswith(" below"):
        return ""
    jj.out("--ignore-working-copy", "new", "@")
    return jj.out("--ignore-working-copy", "log", "--no-graph", "-r", "@",
                  "-T", "change_id").strip()


@dataclass(frozen=True)
class Gathered:
    """The agent's work, back in the task's change."""

    task: Rev                    # the task's change as it is now, described as the task
    note: str = ""               # what the agent did to @, for the user ("" when nothing to say)
    # A change the agent's own jj command rewrote and gather put back: a lane's runner brings
    # your checkout up to date when it stood there.
    rewrote: str | None = None


def gather(jj: Jj, change: Change, message: str, begun: str | None, parked: str) -> Gathered:
    """`jj commit` sealed a change that is not the task's (or park made `parked`, and there
    was no commit): the agent ran `jj commit` or `jj new` (its changes go back into the
    task's), or moved @ off the task's change, or the task's change is gone (the commit is
    reverted, and the error says why). The task's change, described with `message`."""
    task, _ = where(jj, change.change_id)
    if task is not None and on_top(jj, task):
        return Gathered(fold(jj, task, message, checked=True))
    if not parked:
        _revert_last(jj)
    if task is None:
        raise _gone(change)
    moved = _moved_back(jj, task, begun, parked) if begun is not None else None
    if moved is None:
        raise _moved_off(task)
    jj.out("describe", "-r", task.change_id, "-m", message)
    return Gathered(jj.revs(task.change_id)[0], *moved)


def put_back(jj: Jj, change: Change, begun: str | None, parked: str
             ) -> tuple[str, str | None] | None:
    """Before a lane's attempt is abandoned (it failed, or a stop cut it short) when park
    found its agent had moved @ off the task's change (`jj edit @-`, onto a task landed
    before): the agent's edits go into the task's change, which the abandon keeps aside and
    drops, and the change it moved to is put back as it was at the begin, as gather does for
    a finish. Without this the abandon's own snapshot took those edits into the landed change
    and dropped only the task's. What to tell the user and the change put back (as
    _moved_back); None when park made nothing or what @ was at the begin cannot be told (the
    abandon then goes on as for any other attempt)."""
    if not parked or begun is None:
        return None
    task, _ = where(jj, change.change_id)
    if task is None:
        return None
    return _moved_back(jj, task, begun, parked, went="are in the copy kept")


def _moved_back(jj: Jj, task: Rev, begun: str, parked: str,
                went: str = "were moved into the task's change") -> tuple[str, str | None] | None:
    """A lane's agent moved @ off its task's change onto another that was there when the
    task began (`jj edit @-`: the change of a task landed before), and wrote there (in your
    checkout such a change may be yours, and stays as the agent left it, the task
    stopped). The agent's edits go into the task's change: those park's change took, and
    any the agent's own jj commands took into that change, which is put back as it was at
    the begin (read with at_operation; its content, not its commit id: `rewrote` says so,
    for a lane, whose runner then brings your checkout up to date). @ is the task's change
    again. What to tell the user (`went`: where the edits went), and that change when it was
    rewritten; None (nothing done) when @ is a change the agent made or jj cannot tell what
    it was at the begin."""
    wc = jj.revs("@")[0]
    was_parked = wc.change_id == parked
    if was_parked and len(wc.parents) != 1:
        return None
    here = jj.revs(wc.parents[0])[0] if was_parked else wc
    was = jj.ids(f"at_operation({begun}, present(change_id({here.change_id})))", "commit_id")
    if len(was) != 1:
        return None
    wrote, rewrote = was_parked and bool(wc.files), None
    if was[0] != here.commit_id:
        wrote = True
        files = jj.out("diff", "--from", was[0], "--to", here.commit_id, "--name-only").split()
        jj.out("restore", "--from", was[0], "--into", here.change_id)
        if files:
            jj.out("restore", "--from", here.commit_id, "--into", task.change_id,
                   "--", fileset(files))
        rewrote = here.change_id
    if was_parked and wc.files:
        jj.out("squash", "--from", wc.change_id, "--into", task.change_id,
               "--use-destination-message")
    short = here.change_id[:12]
    note = f"its agent moved the working copy onto change {short} (`jj edit`)" + (
        f" and wrote there: its edits {went}, and {short} is as it was" if wrote
        else ": it is back on the task's change")
    jj.out("edit", task.change_id)
    return note, rewrote


def _revert_last(jj: Jj) -> None:
    """Revert our own `jj commit` (the operation just made), so a change that was not the
    task's keeps its own description and @ stays where the agent left it."""
    op = op_id(jj.root)
    if op is not None:
        jj.out("op", "revert", op)


def _gone(change: Change) -> VcsError:
    return VcsError(f"the task's change {change.short} is gone (abandoned by hand?)")


def _moved_off(task: Rev) -> VcsError:
    return VcsError(f"the working copy moved off the task's change {task.change_id[:12]} "
                    "(did the agent run `jj edit`?); move it back and retry")
