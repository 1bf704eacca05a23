"""What every part of a run shares: the project and its state, the agent, the VCS, the options,
where events go, and the clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloop.agents import Agent
from agentloop.clock import Clock
from agentloop.events import Emit
from agentloop.project import Project
from agentloop.state import State
from agentloop.vcs import Vcs

if TYPE_CHECKING:
    from agentloop.runner import Options


class RunContext:
    """The shared parts of one run; the runner, its attempts and its reviews build on it."""

    def __init__(self, project: Project, state: State, agent: Agent, vcs: Vcs,
                 options: "Options", emit: Emit, clock: Clock) -> None:
        self.project = project
        self.state = state
        self.agent = agent
        self.vcs = vcs
        self.options = options
        self.emit = emit
        self.clock = clock

    def save(self) -> None:
        """Persist the state now."""
        self.project.store.save(self.state)
