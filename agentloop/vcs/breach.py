"""What a lane's check finds an agent did outside its task (agentloop.vcs.git.lane_as_recorded,
agentloop.vcs.git.your_checkout, agentloop.vcs.jj.lane_check): a value, the kind of thing it did
and the one line a user reads, with the commands to see it and repair it; and LaneBreach, the
stop a lane's step raises with one, whichever the backend.

Trust nothing the agent could touch: what agent-loop recorded (the lane's branch and commit,
what it landed, the operation jj was at) against what the repository says now. A breach that
stops the group is never landed and never blamed on the user; the lane and everything in it stay
as they are.

What the checks do not catch (an agent can write anywhere its user can): a write into the
user's checkout is told apart from the user's own edits only by its time, so it is said, never a
stop; a write into another lane's folder shows up as that lane's task's change."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from agentloop.errors import VcsError
from agentloop.ondemand import dataclass

if TYPE_CHECKING:
    from collections.abc import Callable


class Kind(enum.Enum):
    """What the agent did outside its task."""

    LANE_GONE = "lane-gone"                  # the lane's folder was removed
    JJ_REMOVED = "jj-removed"                # jj: the lane's .jj folder was removed
    JJ_FORGOTTEN = "jj-forgotten"            # jj: the lane's workspace was forgotten
    CHECKED_OUT = "checked-out"              # the lane's HEAD is on another branch (yours?)
    BRANCH_DELETED = "branch-deleted"        # the lane's branch is gone
    BRANCH_REWOUND = "branch-rewound"        # the lane's branch no longer holds its commits
    LANDED_LOST = "landed-lost"              # a change this lane landed left the main line
    MAIN_REWOUND = "main-rewound"            # your branch moved back (or was rewritten)
    OPERATION_UNDONE = "operation-undone"    # jj: an operation was undone or restored
    CHECKOUT_WRITTEN = "checkout-written"    # your checkout changed while the agent ran
    AGENT_MOVED_MAIN = "agent-moved-main"    # an agent's git command moved your branch
    AGENT_MOVED_HEAD = "agent-moved-head"    # an agent's git command moved your checkout's HEAD
    GIT_SETTINGS = "git-settings"            # your .git/config or .git/hooks changed meanwhile
    UNDER_WAY = "under-way"                  # a merge, rebase... left stopped in the lane


@dataclass(frozen=True)
class Breach:
    """One thing the agent did outside its task, and how to see and repair it."""

    kind: Kind
    line: str
    commands: tuple[str, ...] = ()
    stops: bool = True       # the group stops; False: said, and the lane goes on
    # Every group stops: what they all land on is not as they left it (your branch moved
    # back), and a landing of any would bury what it lost.
    everywhere: bool = False

    def text(self) -> str:
        """The one line a user reads: what happened, then the commands."""
        if not self.commands:
            return self.line
        return self.line + "; see and repair it with " + ", then ".join(
            f"`{c}`" for c in self.commands)


class LaneBreach(VcsError):
    """A lane step found a Breach that stops its group: nothing of that step lands."""

    def __init__(self, breach: Breach, kept: str | None = None,
                 recheck: Callable[[], Breach | None] | None = None) -> None:
        super().__init__(breach.text())
        self.breach = breach
        # Where the finished agent's work, still in the lane's folder, was set aside (a line
        # agentloop.vcs.git.aside.bring_back reads): the next run lands it, its agent unpaid.
        self.kept = kept
        # The same check made again, from the operations since the step began (jj: another
        # lane's operations after this check change which repair works).
        self.recheck = recheck

    def again(self) -> LaneBreach:
        """This stop, its line read again now (`recheck`); itself when that finds nothing."""
        try:
            found = self.recheck() if self.recheck is not None else None
        except VcsError:
            return self
        if found is None or found.text() == self.breach.text():
            return self
        return LaneBreach(found, self.kept)
