"""The run core needs nothing from an agent but the protocol in agentloop.agents.

`NotesAgent` is written against that protocol alone: it knows no Claude argv, no stream format,
no Claude error kinds. It drives a whole task file on a real git repository, with a failed
attempt that the advisor retries, and a review with feedback and a fix.
"""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path
from typing import Callable

from agentloop.agents import (
    OTHER,
    TRANSIENT,
    Activity,
    AgentResult,
    AgentRun,
    Answer,
    Failure,
    Models,
    Totals,
)
from agentloop.run.events import Event
from agentloop.run.retry import advise
from agentloop.vcs.choose import open_vcs
from tests.support.harness import FakeClock, make_run

PLAN = """\
## Notes
- write one.txt
- write two.txt
## Other
- write three.txt
"""


class NotesAgent:
    """Does "write X" tasks by writing X; fails the first attempt at two.txt; a reviewer that
    wants a second line once; a helper that advises a retry with a hint."""

    name = "notes"
    models = Models(task="t-model", review="r-model", helper="h-model")

    def __init__(self) -> None:
        self.requests: list[AgentRun] = []
        self.asked: list[str] = []
        self.sessions = 0

    def check(self) -> None:
        pass

    def run(self, request: AgentRun, on_activity: Callable[[Activity], None]) -> AgentResult:
        self.requests.append(request)
        request.log.parent.mkdir(parents=True, exist_ok=True)
        request.log.write_text(request.prompt)
        if request.resume:
            session = request.resume
        else:
            self.sessions += 1
            session = f"notes-{self.sessions}"
        totals = Totals(request.before.cost_usd + 0.5, {"output_tokens": 10})
        if request.read_only:
            reviews = sum(1 for r in self.requests if r.read_only)
            verdict = "FEEDBACK: add a second line" if reviews == 1 else "APPROVED"
            return AgentResult(True, 0, session, text=verdict, cost_usd=0.5, totals=totals)
        if "second line" in request.prompt:
            target = next(request.cwd.glob("*.txt"))
            target.write_text(target.read_text() + "second\n")
            return AgentResult(True, 0, session, text="added", cost_usd=0.5, totals=totals)
        name = request.prompt.rsplit("write ", 1)[1].split()[0]
        if name == "two.txt" and "Advice for this attempt" not in request.prompt:
            return AgentResult(False, 1, session, error="disk on fire", cost_usd=0.5,
                               totals=totals)
        (request.cwd / name).write_text("first\n")
        return AgentResult(True, 0, session, text=f"wrote {name}", cost_usd=0.5, totals=totals)

    def classify(self, result: AgentResult, now: datetime) -> Failure:
        return Failure(TRANSIENT if result.timed_out else OTHER, result.error or "failed")

    def ask(self, prompt: str, model: str, cwd: Path, timeout: float = 180) -> Answer:
        self.asked.append(model)
        return Answer('{"retry": true, "reason": "try again", "hint": "cool the disk"}', 0.25)


def git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True,
                          check=True).stdout


def test_a_protocol_only_agent_drives_a_whole_run(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "tasks.md").write_text(PLAN)
    git(tmp_path, "add", "tasks.md")
    git(tmp_path, "commit", "-qm", "plan")
    agent = NotesAgent()
    vcs = open_vcs("git", tmp_path, tmp_path / "tasks.md")
    vcs.prepare()
    events: list[Event] = []
    harness = make_run(tmp_path, PLAN, agent, vcs,
                       lambda **kw: advise(agent, agent.models.helper, cwd=tmp_path, **kw),
                       FakeClock(), events, review=True)
    summary = harness.run()
    tasks = harness.state.tasks
    assert [t.status for t in tasks] == ["completed"] * 3, [t.error for t in tasks]
    assert summary.unfinished == ()
    # Two attempts at two.txt, the second with the advisor's hint, in a fresh session.
    two = [r for r in agent.requests if "two.txt" in r.prompt and not r.read_only]
    assert len(two) == 2 and two[1].resume is None and "cool the disk" in two[1].prompt
    assert tasks[1].attempts == 2 and agent.asked == ["h-model"]
    # The group's session goes on for task 2's first attempt; the other group starts fresh.
    first_two = two[0]
    assert first_two.resume == tasks[0].session_id
    three = next(r for r in agent.requests if "three.txt" in r.prompt and not r.read_only)
    assert three.resume is None
    # Review: the first reviewer asked for a fix, which resumed the developer's session.
    reviewers = [r for r in agent.requests if r.read_only]
    assert all(r.model == "r-model" and r.resume is None for r in reviewers)
    assert (tmp_path / "one.txt").read_text() == "first\nsecond\n"
    # One commit per task, each with its file only.
    log = git(tmp_path, "log", "--format=", "--name-only").split()
    assert log.count("one.txt") == 1 and log.count("two.txt") == 1 and "three.txt" in log
    # Costs: this run's part of the session totals the agent reported, plus the helper call.
    assert tasks[1].cost_usd == 0.5 + 0.25 + 0.5 + 0.5 * sum(
        1 for r in reviewers if "two.txt" in r.prompt)
