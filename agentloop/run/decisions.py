"""What happened in a lane, as values: each step of an attempt (attempt, review, fixes,
conflicts, the lane) returns or hands one of these, with the facts its record needs, and changes
no record itself. The lane hands each to the controller (agentloop.run.handover); the controller
applies it through the one owner of task records (agentloop.run.ledger.apply), in its own
thread, saving once and emitting once.

Two kinds:
- the steps of an attempt as they happen, saved before the next begins so that a kill at any
  instant leaves records a re-run can settle: `Opened`, `RunBegun`, `RunEnded`, `Marked`,
  `ChecksRan`, `Dropped`, `Uncounted`, `Charged` (a helper call's cost, as it is paid), and
  `Waiting` (what a finished task's landing waits for);
- how a task's turn ends: `Completed`, `Blocked`, `Conflicted`, `Held`, `Breached`, `Fatal`,
  and what a failed
  attempt comes to (`Judged`: `Retry`, `WaitFor`, `Failed`, `Stop`; the lane judges,
  agentloop.run.judge). What the lane then does (wait, sleep, stop) is the lane's.
"""

from __future__ import annotations

from typing import Sequence, Union

from agentloop.agents import AgentResult, Failure

# Made when first used: a task that goes well makes a few of these (agentloop.ondemand).
from agentloop.ondemand import dataclass
from agentloop.run.checks import CheckRun
from agentloop.run.events import Event
from agentloop.state.schema import Attempt
from agentloop.vcs.protocol import Change


@dataclass(frozen=True)
class Retry:
    """Try again in a fresh session: with the advisor's `hint`, after `wait` seconds (a
    transient failure's backoff)."""

    reason: str             # why the attempt failed, with the advice when there was some
    failure: str            # why it failed, as the task's error says
    hint: str
    kind: str               # "transient" (a backoff) or "other" (the advisor's word)
    advice: str             # what the advisor (or the backoff) said
    source: str             # where the advice came from
    wait: float = 0.0
    transient: int = 0      # transient failures in a row, this one included
    error: str | None = None   # the failure the next advice hears as the previous one
    helper_cost: float = 0.0   # what the advisor's call cost, charged to the task


@dataclass(frozen=True)
class WaitFor:
    """Not the task's fault and no attempt: wait for a usage limit to reset (`failure`), or run
    it again at once after the whole run was stopped while it worked (`paused` seconds)."""

    outcome: str            # limited | paused
    reason: str
    failure: Failure | None = None
    paused: float = 0.0


@dataclass(frozen=True)
class Failed:
    """The task failed for good in this run."""

    reason: str
    outcome: str | None = None   # the attempt's own outcome when it is not plain `failed`
    attempt_reason: str | None = None
    helper_cost: float = 0.0
    advice: Retry | None = None  # the advisor's no, said before the task fails


@dataclass(frozen=True)
class Stop:
    """The run stops: the agent cannot run at all (`blocked`), or transient failures came too
    many times in a row. The task waits its turn."""

    reason: str
    blocked: bool = False
    counted: bool = True     # whether the attempt counted (a transient failure's did)
    error: str | None = None  # why the last attempt failed, as the task's error says


Decision = Union[Retry, WaitFor, Failed, Stop]


@dataclass(frozen=True)
class Judged:
    """A failed attempt (its last run's `record`) and what it comes to."""

    record: Attempt
    decision: Decision


@dataclass(frozen=True)
class Opened:
    """A new attempt of the task begins in `change`: it counts from this instant."""

    change: Change
    # False: saved with the run's record (RunBegun) the lane hands over next, before anything
    # else happens (no agent, no VCS command in between): a kill before that save leaves the
    # task as a kill a moment before the opening would, which a re-run settles the same way.
    save: bool = True


@dataclass(frozen=True)
class RunBegun:
    """An agent run is about to start: its record (the answer) exists before the agent does."""

    change: Change
    number: int
    log: str
    resumed: bool
    iteration: int = 1
    role: str = "developer"
    round: int = 0
    workdir: str | None = None   # where it runs, from the repository root


@dataclass(frozen=True)
class RunEnded:
    """An agent run ended with `result`: its session, cost and tokens go into `record`."""

    record: Attempt
    result: AgentResult


@dataclass(frozen=True)
class Charged:
    """A helper call for this run (the commit message's writer) cost `cost`: charged to `record`
    as it is paid, whatever the task's turn then comes to (landed, held, conflicted, stopped)."""

    record: Attempt
    cost: float


@dataclass(frozen=True)
class Marked:
    """A run's record is given its outcome after it ended (continued, limited, a reviewer's
    verdict or failure, a conflict resolved or not), and `said` is emitted once it is saved."""

    record: Attempt
    outcome: str
    reason: str | None = None
    verdict: str | None = None
    said: Event | None = None
    save: bool = True        # False: saved with the next step (no write of its own)
    resets_at: float | None = None   # a usage limit's reset, when it said one (limited)


@dataclass(frozen=True)
class ChecksRan:
    """The user's checks ran after this run: each part of its record (saved with the next
    step's save, no write of its own)."""

    record: Attempt
    runs: Sequence[CheckRun]


@dataclass(frozen=True)
class Dropped:
    """The lane abandoned the change `change_id` (its VCS did it): no record names it now;
    `number`: only that attempt's runs (None: every run of the task)."""

    change_id: str
    number: int | None = None
    kept: str = ""  # the VCS's line: where the dropped edits are kept, how to bring them back
    finished: bool = False  # its agent had finished: the kept edits are the task's work
    said: bool = False  # the VCS said `kept` already (git: among the run's first lines)


@dataclass(frozen=True)
class Moved:
    """A finished task's change is on the history again under another id, rewritten (the user
    amended or rebased it): its record follows it, its status stays."""

    change_id: str
    commit_id: str


@dataclass(frozen=True)
class Uncounted:
    """Attempt `number` does not count (Ctrl+C, a stop, a kill): its unfinished runs end as
    `outcome`, the task waits its turn as `status`. `stopped`: runs that ended well were
    stopped by what came after."""

    number: int
    outcome: str
    status: str
    reason: str
    stopped: bool = False


@dataclass(frozen=True)
class Completed:
    """The task is done (or unapproved, its change kept) in `done`, or (status `landing`) its
    commit lands beside the next task's agent; `helper_cost`: the commit message's writer;
    `feedback`: the reviewer's last word on an unapproved task."""

    record: Attempt
    done: Change
    status: str
    note: str | None = None
    feedback: str | None = None
    helper_cost: float = 0.0
    # False: said already, when its landing began beside the next agent (status `landing`).
    said: bool = True
    # What the VCS found and put right as the task was committed (`task N: ...`: what the agent
    # did to your checkout), said as it was found: kept after `note` in the task's record.
    aside: str | None = None


@dataclass(frozen=True)
class Blocked:
    """The agent said it cannot do this task without a person; the group goes on."""

    record: Attempt
    reason: str
    session: str | None


@dataclass(frozen=True)
class Conflicted:
    """A lane's task whose change does not fit the main line, kept on the lane's branch as
    `commit` for a person; the group stops, the others go on."""

    record: Attempt
    commit: str
    reason: str
    session: str | None


@dataclass(frozen=True)
class Held:
    """A lane's finished task whose landing waited past the lane wait on the user's edits in
    their checkout: kept on the lane's branch as `commit`; the group stops, the others go on,
    and the next run lands it first."""

    record: Attempt
    commit: str
    reason: str


@dataclass(frozen=True)
class Breached:
    """The agent acted outside its task (agentloop.vcs.breach): nothing of the step landed, the
    lane stays as it is, the attempt does not count; `line` says what happened and the commands
    that show and repair it."""

    record: Attempt
    line: str


@dataclass(frozen=True)
class Fatal:
    """The agent reported an error so grave that the run stops; the task waits its turn."""

    record: Attempt
    reason: str


@dataclass(frozen=True)
class Unretried:
    """A failed attempt's retry did not start (the budget ran out, or the run stopped first):
    the task waits its turn again, its failed attempt counted, `reason` added to its error."""

    reason: str


@dataclass(frozen=True)
class Waiting:
    """A finished task's landing waits on the user's edits in their checkout; `text` says for
    what (--status shows it until the task's turn ends)."""

    text: str


@dataclass(frozen=True)
class MayStart:
    """A lane's question before each task: may it start now? (The controller reads the stop
    request and the plan; a task the user ticked or reworded meanwhile changes its record.)"""


Step = Union[Judged, Opened, RunBegun, RunEnded, Charged, Marked, ChecksRan, Dropped, Moved,
             Uncounted, Unretried, Waiting, Completed, Blocked, Conflicted, Held, Breached,
             Fatal]
