"""Which finished tasks' changes you took back yourself: abandoned by `jj abandon` run in your
checkout (the documented way to take one task back), not by an agent in a lane. jj records
the workspace each operation ran in; a lane's agent works in its lane's workspace
(`agent-loop-<name>`), so an abandon from any other workspace is yours. Such a change stays
taken back while the run goes on (not an agent's breach, nothing to stop for), as one you
abandoned between runs does."""

from __future__ import annotations

from typing import Iterable

from agentloop.errors import VcsError
from agentloop.vcs.jj.oplog import changes_at, operations
from agentloop.vcs.jj.run import Jj
from agentloop.vcs.jj.workspaces import lane_of


def taken_back(jj: Jj, lost: Iterable[str]) -> set[str]:
    """Of `lost` (change ids no longer on the main line), those an abandon run outside every
    lane's workspace dropped; nothing when jj cannot tell. One `jj op log`, then for each such
    abandon one `jj log` of the commits visible before it and not after, and, where those hold
    a lost change, one more of which of those changes still have a commit after it."""
    lost = set(lost)
    if not lost:
        return set()
    try:
        found: set[str] = set()
        for op, workspace, description in ((o.id, o.workspace, o.description)
                                           for o in operations(jj)):
            if not description.startswith("abandon ") or not workspace \
                    or lane_of(workspace) is not None:
                continue
            gone = f"at_operation({op}-, all()) ~ at_operation({op}, all())"
            dropped = set(changes_at(jj, gone))
            # An abandon also hides the old commits of the changes it rebased (those above the
            # one it dropped): a change is gone only where no commit of it is left after it.
            wanted = {d for d in dropped if any(d.startswith(c) for c in lost - found)}
            if not wanted:
                continue
            kept = " | ".join(f"change_id({d})" for d in sorted(wanted))
            wanted -= changes_at(jj, f"at_operation({op}, {kept})")
            found |= {c for c in lost if any(d.startswith(c) for d in wanted)}
            if found == lost:
                break
    except VcsError:
        return set()
    return found


def revived(jj: Jj, changes: Iterable[str], since: str | None) -> set[str]:
    """Of `changes` (finished tasks' change ids still in the repository), those an abandon run
    outside every lane's workspace after operation `since` (the run's start) dropped and that
    are visible again: jj merged that abandon with a concurrent operation of agent-loop's made
    on the view before it (a landing's rebase of the change, which keeps a new commit of it),
    though jj told you "Abandoned". The caller abandons them again, as you asked; the history
    check then finds them taken back. One `jj op log` (nothing when `since` is not among its
    last oplog.DEPTH operations); for each abandon since, one or two `jj log`."""
    changes = set(changes)
    if not changes or since is None:
        return set()
    try:
        ops = {o.id: (list(o.parents), o.workspace, o.description) for o in operations(jj)}
        if since not in ops:
            return set()
        # The operations after `since`: reached from the newest without passing it.
        after: set[str] = set()
        walk = [next(iter(ops))]
        while walk:
            op = walk.pop()
            if op == since or op in after or op not in ops:
                continue
            after.add(op)
            walk += ops[op][0]
        found: set[str] = set()
        for op in after:
            _, workspace, description = ops[op]
            if not description.startswith("abandon ") or not workspace \
                    or lane_of(workspace) is not None:
                continue
            # Dropped by it (not merely rewritten by it, as the changes above the one it
            # dropped are) and visible now.
            wanted = " | ".join(f"change_id({c})" for c in sorted(changes - found))
            if not wanted:
                break
            gone = f"at_operation({op}-, {wanted}) ~ at_operation({op}, {wanted})"
            dropped = set(changes_at(jj, gone))
            if dropped:
                dropped -= changes_at(jj, f"at_operation({op}, {wanted})")
            found |= {c for c in changes if any(d.startswith(c) for d in dropped)}
        if not found:
            return set()
        now = set(jj.out("--ignore-working-copy", "log", "--no-graph", "-r",
                         " | ".join(f"change_id({c})" for c in sorted(found)),
                         "-T", 'change_id ++ "\\n"').split())
        found = {c for c in found if any(n.startswith(c) for n in now)}
    except VcsError:
        return set()
    return found
