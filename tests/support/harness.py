"""Drives the run core in-process: a Run built from a task file, with any agent and VCS; and the
scripted parts such a run is given (an agent, an advisor, a clock), so no process starts and no
second passes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from agentloop.agents import Activity, AgentResult, AgentRun, Answer, Failure, Models
from agentloop.agents.claude_errors import classify
from agentloop.options.record import RunOptions
from agentloop.run.clock import Clock
from agentloop.run.context import Run
from agentloop.run.events import Event, RunFinished
from agentloop.run.loop import run_tasks
from agentloop.run.retry import Advice
from agentloop.state.learnings import Learnings
from agentloop.state.project import load_state, open_project
from agentloop.state.schema import State
from agentloop.vcs.none import NoneVcs


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


START = 1_800_000_000.0


class FakeClock:
    """Time that moves only when the runner sleeps."""

    def __init__(self) -> None:
        self.now = START
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


OK = AgentResult(ok=True, exit_code=0, session_id="s-ok", text="done", cost_usd=0.01)


def failed(**fields: Any) -> AgentResult:
    base: dict[str, Any] = dict(ok=False, exit_code=1, session_id="s-bad", error="it broke",
                                text="it broke", cost_usd=0.01)
    return AgentResult(**{**base, **fields})


class ScriptedAgent:
    """Answers each run with the next result; records what it was asked."""

    name = "scripted"
    models = Models("opus", "sonnet", "haiku")

    def __init__(self, results: list[AgentResult] | Callable[[AgentRun], AgentResult]) -> None:
        self.results = results
        self.requests: list[AgentRun] = []

    def check(self) -> None:
        pass

    def classify(self, result: AgentResult, now: Any) -> Failure:
        return classify(result, now)  # results here read like Claude's

    def ask(self, prompt: str, model: str, cwd: Path, timeout: float = 180) -> Answer:
        return Answer("", error="no helper here")

    def run(self, request: AgentRun, on_activity: Callable[[Activity], None]) -> AgentResult:
        self.requests.append(request)
        request.log.parent.mkdir(parents=True, exist_ok=True)
        request.log.write_text(f"log of attempt {len(self.requests)}\n")
        if callable(self.results):
            return self.results(request)
        return self.results.pop(0) if len(self.results) > 1 else self.results[0]


class ScriptedAdvisor:
    def __init__(self, *advice: Advice) -> None:
        self.advice = list(advice)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Advice:
        self.calls.append(kwargs)
        return self.advice.pop(0) if len(self.advice) > 1 else self.advice[0]


RETRY = Advice(True, "worth another go", "check the imports first", "advisor", 0.002)
STOP = Advice(False, "the task is impossible", "", "advisor", 0.002)


def make(tmp_path: Path, text: str, agent: ScriptedAgent, advisor: ScriptedAdvisor,
         **options: Any) -> tuple[Harness, FakeClock, list[Event]]:
    clock = FakeClock()
    events: list[Event] = []
    runner = make_run(tmp_path, text, agent, NoneVcs(), advisor, clock, events, **options)
    return runner, clock, events
