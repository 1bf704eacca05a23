"""What an attempt came to, handed from the attempt to the review and on to the runner."""

from __future__ import annotations

from dataclasses import dataclass

from agentloop.agents import AgentResult
from agentloop.report import Report
from agentloop.state import Attempt
from agentloop.vcs import Change


@dataclass(frozen=True)
class Outcome:
    """What an attempt came to: the last developer run, its result and report, and for a
    successful one the status it earns (completed, or unapproved by the reviewer) and why."""

    attempt: Attempt
    change: Change
    result: AgentResult
    report: Report
    status: str = "completed"
    note: str | None = None
