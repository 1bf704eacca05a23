"""The empty @ a task's finish left on its change, carried to the next begin, which takes it as
it was then without a `jj log` (as the git backend does, agentloop.vcs.git.quick): safe while
nothing but agent-loop's own code ran since, no jj command (the user's `jj commit`, say) moved
jj's operation, and only a moment passed (a pause between tasks leaves the user time to edit,
and their edits must not become the next task's)."""

from __future__ import annotations

import time
from pathlib import Path

from agentloop import proc
from agentloop.vcs.jj.run import Rev, op_head

# How long after a task's `jj new` the next task may take that change as it was then.
CARRY_SECONDS = 0.5


class Carried:
    """@ as finish's `jj new` left it, with proc.started(), the time and jj's operation then.

    A plain class, set once: a dataclass would compile its methods at every jj run's start."""

    __slots__ = ("started", "at", "op", "fresh")

    def __init__(self, started: int, at: float, op: str | None, fresh: Rev) -> None:
        self.started, self.at, self.op, self.fresh = started, at, op, fresh


def keep(root: Path, fresh: Rev, task: Rev) -> Carried | None:
    """`fresh`, the @ just made on the finished `task`, carried when it is empty and blank."""
    if fresh.parents == (task.change_id,) and fresh.empty and not fresh.described:
        return Carried(proc.started(), time.monotonic(), op_head(root), fresh)
    return None


def holds(carried: Carried | None, root: Path) -> bool:
    """Whether @ is still the empty change `carried` names: no process started since, within
    CARRY_SECONDS, and jj's operation at `root` the one it was then."""
    return carried is not None and carried.started == proc.started() and \
        time.monotonic() - carried.at <= CARRY_SECONDS and carried.op is not None and \
        carried.op == op_head(root)


def passed_on(carried: Carried | None, root: Path, since: int, op: str | None
              ) -> Carried | None:
    """`carried` still, when the processes started since `since` were agent-loop's own jj
    commands elsewhere that left @ at `root` as it was at operation `op`; else None."""
    if carried is not None and carried.started == since and carried.op == op:
        return Carried(proc.started(), carried.at, op_head(root), carried.fresh)
    return None
