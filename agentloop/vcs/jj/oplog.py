"""jj's operation log, as the repairs that read it see it (an undo in a lane, an abandon of
yours: agentloop.vcs.jj.lane_check and takenback): read once for each operation the repository
is at. Which one that is costs no process (the one file name in .jj/repo/op_heads/heads, with
git's HEAD: agentloop.vcs.jj.run.op_head), and the log up to it never changes; several looks
in one history check, or checks with no jj command between them, share one `jj op log`."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agentloop.vcs.jj.run import Jj, op_head

# How far back the log is read: a run's own operations since what a repair looks for are few.
DEPTH = 200
# One record an operation, its fields apart: a description may hold tabs and lines.
_TEMPLATE = ('id ++ "\\x1f" ++ parents.map(|p| p.id()).join(",") ++ "\\x1f" ++ '
             'workspace_name ++ "\\x1f" ++ description ++ "\\x1e"')


@dataclass(frozen=True)
class Operation:
    """One operation of the log: its id, its parents' ids, the workspace it ran in (empty
    when jj names none) and its whole description."""
    id: str
    parents: tuple[str, ...]
    workspace: str
    description: str


_lock = threading.Lock()
# The repository's last read log, by where it was read: (op_head then, its operations).
_read: dict[str, tuple[str, tuple[Operation, ...]]] = {}


def operations(jj: Jj) -> tuple[Operation, ...]:
    """The newest DEPTH operations of the repository of `jj`, newest first: one `jj op log`,
    none when the repository is at the operation of the last read (lanes side by side ask at
    once: the worst is a second read)."""
    key, head = str(jj.root), op_head(jj.root)
    with _lock:
        known = _read.get(key)
    if head is not None and known is not None and known[0] == head:
        return known[1]
    out = jj.out("--ignore-working-copy", "op", "log", "--no-graph", "-n", str(DEPTH), "-T",
                 _TEMPLATE)
    found = []
    for record in out.split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        op, parents, workspace, description = (record.split("\x1f", 3) + ["", "", ""])[:4]
        found.append(Operation(op, tuple(p for p in parents.split(",") if p),
                               workspace.removesuffix("@"), description))
    ops = tuple(found)
    # The head after the read: a read that imported git's refs made an operation of its own.
    after = op_head(jj.root)
    if after is not None and ops and after.split(" ", 1)[0] == ops[0].id:
        with _lock:
            _read[key] = (after, ops)
    return ops


# Answers of revsets read at a named operation, by where they were read.
_at: dict[tuple[str, str], frozenset[str]] = {}


def changes_at(jj: Jj, revset: str) -> frozenset[str]:
    """The change ids of `revset`, which evaluates every revision at_operation() of an
    operation named by its id: such an answer never changes, and is read once (a history check
    after every task asks again of the same abandon)."""
    key = (str(jj.root), revset)
    with _lock:
        known = _at.get(key)
    if known is not None:
        return known
    found = frozenset(jj.out("--ignore-working-copy", "log", "--no-graph", "-r", revset,
                             "-T", 'change_id ++ "\\n"').split())
    with _lock:
        _at[key] = found
    return found
