"""A lane's jj workspace its agent forgot (`jj workspace forget`), brought back: the agent's change
is still in the repository and its files are still on disk in the lane's folder, only the
repository's record of the workspace is gone. `jj op revert` of that one operation puts the
record back (every other operation stays as it is, another lane's too), and the lane's next
command snapshots the files the agent wrote after the forget into the task's change, which then
lands as any other: the agent is not paid again for work it did.

A revert is what the lanes' check reads as an undo (agentloop.vcs.jj.lane_check.check_jj_lane): the
forget operations reverted here are kept (JjMainLine.revived) for that check to pass over."""

from __future__ import annotations

from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.jj.lane_check import operations_since
from agentloop.vcs.jj.run import Jj, forgotten_by
from agentloop.vcs.lanes import bookkeeping


def revive(jj: Jj, root: Path, workspace: str, since: str, reverted: set[str]) -> str | None:
    """Revert the newest operation since `since` that forgot `workspace` (jj: the main
    checkout's runner, `root` its folder); the id of that operation, or None when none did or
    the revert failed. Under the lanes' bookkeeping lock, the workspace looked for first: a lane
    that met the same forget a moment before (one command forgot several) brought it back.
    `reverted` (the run's, every lane's) gets the operation before the revert is made: another
    lane's check that sees the revert knows it for what it is."""
    with bookkeeping(root):
        try:
            found = next((op for op, description in operations_since(jj, since)
                          if workspace in forgotten_by(description)), None)
            if found is None:
                return None
            listed = jj.out("--ignore-working-copy", "workspace", "list", "-T",
                            'name ++ "\\n"').split()
            if workspace not in listed:
                reverted.add(found)
                # Without a snapshot: the agent may have forgotten your checkout's workspace
                # too, and this revert brings that back as well.
                jj.out("--ignore-working-copy", "op", "revert", found)
        except VcsError:
            return None
    return found


def said(operation: str) -> str:
    """What the run says of a workspace brought back."""
    return (f"the lane's jj workspace was forgotten (`jj workspace forget`, operation "
            f"{operation[:12]}, by an agent or from outside) and is brought back (`jj op revert "
            f"{operation[:12]}`): nothing of its agent's work is lost, and it is not paid again")
