"""Drives the run core in-process: a Run built from a task file, with any agent and VCS."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from agentloop.options import RunOptions
from agentloop.run.clock import Clock
from agentloop.run.context import Run
from agentloop.run.events import Event, RunFinished
from agentloop.run.loop import run_tasks
from agentloop.state.learnings import Learnings
from agentloop.state.project import load_state, open_project
from agentloop.state.schema import State


class Harness:
    """One run's context, and the loop over it; `vcs` can be swapped between runs."""

    def __init__(self, ctx: Run) -> None:
        self.ctx = ctx

    @property
    def state(self) -> State:
        return self.ctx.state

    @state.setter
    def state(self, value: State) -> None:
        self.ctx = dataclasses.replace(self.ctx, state=value)

    @property
    def project(self) -> Any:
        return self.ctx.project

    @property
    def vcs(self) -> Any:
        return self.ctx.vcs

    @vcs.setter
    def vcs(self, value: Any) -> None:
        self.ctx = dataclasses.replace(self.ctx, vcs=value)

    def run(self, notes: tuple[str, ...] = (), only: tuple[int, ...] = ()) -> RunFinished:
        return run_tasks(self.ctx, only, notes)


def make_run(tmp_path: Path, text: str, agent: Any, vcs: Any, advisor: Callable[..., Any],
             clock: Clock, events: list[Event], **options: Any) -> Harness:
    """A task file `text` in tmp_path, and a run of it with these parts and options."""
    (tmp_path / "tasks.md").write_text(text)
    project = open_project(Path("tasks.md"), tmp_path)
    state, _ = load_state(project)
    ctx = Run(project, state, agent, vcs, RunOptions(**options), events.append,
              Learnings(project.store.dir), advisor, clock=clock)
    return Harness(ctx)
