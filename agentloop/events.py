"""Typed events the runner emits; the console (and later other consumers) subscribe to them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from agentloop.agents import AgentResult


@dataclass(frozen=True)
class RunStarted:
    """A run begins: how many tasks are left of how many, and notes from preparing the VCS."""

    pending: int
    total: int
    vcs: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskStarted:
    """A task attempt begins."""

    index: int
    total: int
    group: str
    summary: str
    attempt: int
    iteration: int = 1


@dataclass(frozen=True)
class ChangeCreated:
    """The VCS made the change this attempt's edits go into."""

    vcs: str
    change_id: str


@dataclass(frozen=True)
class AgentStarted:
    """The agent process starts; `resume` is the session it continues, if any."""

    log: str
    resume: str | None


@dataclass(frozen=True)
class AgentActivity:
    """A short line about what the agent is doing now."""

    text: str


@dataclass(frozen=True)
class AgentFinished:
    """The agent process ended."""

    result: AgentResult
    seconds: float
    cost_usd: float     # this run's own cost (the CLI's total adds up over a resumed session)


@dataclass(frozen=True)
class ChangeAbandoned:
    """An attempt's change was dropped (a failed or interrupted attempt)."""

    vcs: str
    change_id: str


@dataclass(frozen=True)
class RetryDecided:
    """After a failed attempt: whether the task runs again, why, and after how long a wait."""

    index: int
    attempt: int
    retry: bool
    kind: str            # transient | other
    reason: str
    hint: str = ""
    source: str = ""     # "advisor", "fallback: …", or "backoff" for transient failures
    wait_seconds: float = 0.0


@dataclass(frozen=True)
class LimitWait:
    """A usage or rate limit: the run waits (not a failure, not an attempt)."""

    reason: str
    seconds: float
    until: float         # unix seconds
    wait: int            # this is the n-th wait of the run
    max_waits: int


@dataclass(frozen=True)
class TaskFinished:
    """A task reached a final status in this run."""

    index: int
    status: str
    change_id: str | None
    files: int
    error: str | None


@dataclass(frozen=True)
class RunFinished:
    """The run ended (all done, or stopped); counts by status, cost and time."""

    counts: tuple[tuple[str, int], ...]
    cost_usd: float
    seconds: float
    logs: str
    stopped: str | None = None   # why the run stopped early, if it did
    notes: tuple[str, ...] = ()  # things the user should look at (tasks that keep stalling)


Event = Union[RunStarted, TaskStarted, ChangeCreated, AgentStarted, AgentActivity, AgentFinished,
              ChangeAbandoned, RetryDecided, LimitWait, TaskFinished, RunFinished]
Emit = Callable[[Event], None]
