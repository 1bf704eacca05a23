"""What a failed attempt comes to, as a value: the lane judges (agentloop.run.lane.judge) and
the ledger applies it (agentloop.run.ledger.apply), changing the records, saving once and
emitting once. Judging changes no record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from agentloop.agents import Failure


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
