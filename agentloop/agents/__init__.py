"""The agent protocol: what the runner asks of a coding agent, and what it gets back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol


@dataclass(frozen=True)
class AgentRun:
    """One run of the agent on one prompt."""

    prompt: str
    model: str
    cwd: Path
    log: Path                     # the human-readable log, written while the agent runs
    raw_log: Path                 # the agent's raw output, one JSON object a line
    resume: str | None = None     # session id to continue, or None for a fresh session
    header: tuple[tuple[str, str], ...] = ()   # extra "key: value" lines for the log header
    timeout: float | None = None
    budget_usd: float | None = None            # the CLI's own spending cap for this run
    read_only: bool = False       # the reviewer: may read the project's files, never change them


@dataclass(frozen=True)
class AgentResult:
    """What one run produced. `ok` is False for any failure; `error` then says why in one line."""

    ok: bool
    exit_code: int | None
    session_id: str | None
    text: str = ""
    error: str | None = None
    cost_usd: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    num_turns: int | None = None
    duration_ms: int | None = None
    permission_denials: int = 0
    api_error_status: int | None = None
    api_error_type: str | None = None     # e.g. rate_limit_error, overloaded_error, authentication_error
    api_error: str | None = None          # a finer cause where the CLI gives one: usage_limit_reached
    limit_resets_at: float | None = None  # unix seconds, from a rejected rate_limit_event
    stderr: str = ""                      # the last lines the agent wrote to stderr
    timed_out: bool = False
    model: str | None = None              # the model the CLI ran (from its init line)
    subtype: str | None = None            # the result's subtype, e.g. error_max_budget_usd


class Agent(Protocol):
    """A coding agent the loop can drive."""

    name: str

    def check(self) -> None:
        """Raise ProgramNotFound (or AgentBlocked) when the agent cannot run at all."""

    def run(self, request: AgentRun, on_activity: Callable[[str], None]) -> AgentResult:
        """Run the agent; `on_activity` gets a short line for each thing it does."""
