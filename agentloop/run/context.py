"""What every step of a run is handed: one value, passed in, never a base class to inherit from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from agentloop.agents import Agent
from agentloop.options import RunOptions
from agentloop.run.clock import Clock, SystemClock
from agentloop.run.events import Emit
from agentloop.state.learnings import Learnings
from agentloop.state.project import Project
from agentloop.state.schema import State, TaskState
from agentloop.vcs import Vcs

# The retry advisor and the commit-message writer, as the run calls them (agentloop.helpers).
Advisor = Callable[..., Any]
Distiller = Callable[..., Any]


@dataclass
class Tally:
    """What a run counts as it goes: usage-limit waits, and the tasks that failed in a row."""

    limit_waits: int = 0
    failed_in_row: list[int] = field(default_factory=list)
    planned: tuple[int, ...] = ()     # the tasks this run takes, in order


@dataclass(frozen=True)
class Run:
    """The shared parts of one run: project and state, agent, VCS, options, events, clock."""

    project: Project
    state: State
    agent: Agent
    vcs: Vcs
    options: RunOptions
    emit: Emit
    learnings: Learnings
    advisor: Advisor
    distiller: Distiller | None = None
    clock: Clock = SystemClock()
    tally: Tally = field(default_factory=Tally)

    def save(self, task: TaskState | None = None) -> None:
        """Persist the state now; `task`: only that task's record (and top-level fields)
        changed since the last save, so a journal line can say it all."""
        self.project.store.save(self.state, task)

    def model(self, role: str) -> str:
        """The model for a developer's or a reviewer's run: the option, else the agent's own."""
        if role == "reviewer":
            return self.options.review_model or self.agent.models.review
        return self.options.model or self.agent.models.task
