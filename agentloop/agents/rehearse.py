"""A stand-in agent for `--rehearse`: the whole loop runs offline and costs nothing.

Each task makes one small, visible edit (a line in `agent-loop-rehearsal.md` at the repository
root), so the changes, the logs, `--status` and undoing a task can all be tried in seconds. Its
log shows the prompt a real run would send and which agent would get it. Helper calls (the retry
advisor, commit messages) answer nothing, so the loop's own fallbacks show.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Callable, Mapping

from agentloop.agents import OTHER, Activity, AgentResult, AgentRun, Answer, Failure, Models

NOTES = "agent-loop-rehearsal.md"


class RehearsalAgent:
    """Does every task by writing one line about it; never starts a process."""

    name = "rehearse"
    reports_cost = True  # it spends nothing
    models = Models(task="rehearsal", review="rehearsal", helper="rehearsal")
    caps_spend = True   # a rehearsal spends nothing, whatever the cap

    def __init__(self, program: str | None = None, env: Mapping[str, str] | None = None,
                 sandbox: object = None) -> None:
        self.program = program  # no process, so nothing for a sandbox to confine

    def check(self) -> None:
        """Always ready: nothing to install, nobody to log in."""

    def run(self, request: AgentRun, on_activity: Callable[[Activity], None]) -> AgentResult:
        """Write the log a real run would start with, make the task's small edit, answer."""
        session = request.resume or str(uuid.uuid4())
        task = dict(request.header).get("task", "a task")
        request.log.parent.mkdir(parents=True, exist_ok=True)
        request.raw_log.write_text("")
        lines = ["== agent-loop rehearsal: no agent ran, nothing was sent ==",
                 *(f"{key}: {value}" for key, value in request.header),
                 f"session: {'resuming ' + session if request.resume else 'new ' + session}",
                 f"a real run would send this prompt ({len(request.prompt)} characters) to "
                 f"the agent, with model {request.model!r}:", "", "-- prompt --",
                 request.prompt.rstrip(), "", "-- rehearsal --"]
        if request.read_only:
            text = "The rehearsal reviewer looked at the change.\nAPPROVED"
        else:
            notes = request.cwd / NOTES
            if not _resolved(notes):  # a parallel run's conflict: both sides kept, that is all
                with open(notes, "a", encoding="utf-8") as out:
                    out.write(f"- rehearsed task {task}\n")
            on_activity(Activity(f"Write {NOTES}", f"Write {NOTES}", 1, 1))
            lines.append(f"→ Write {notes}")
            text = (f"Rehearsal: added a line for task {task} to {NOTES}.\n"
                    "Progress: done (rehearsal).\nLearnings: none")
        lines += ["-- result --", text]
        request.log.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return AgentResult(ok=True, exit_code=0, session_id=session, text=text, num_turns=1,
                           duration_ms=0, model="rehearsal")

    def classify(self, result: AgentResult, now: datetime) -> Failure:
        """A rehearsal run never fails; should one, the advisor decides."""
        return Failure(OTHER, result.error or "rehearsal failed")

    def ask(self, prompt: str, model: str, cwd: Path, timeout: float = 180) -> Answer:
        """No helper model in a rehearsal: the loop's fallbacks take over."""
        return Answer("", error="rehearsal: no helper model")


def _resolved(notes: Path) -> bool:
    """Resolve a conflict in the notes file (a parallel run's groups each added a line there)
    by keeping both sides' lines; whether there was one."""
    try:
        lines = notes.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    if not any(line.startswith("<<<<<<< ") for line in lines):
        return False
    kept, base = [], False
    for line in lines:
        if line.startswith("||||||| "):
            base = True
        elif line.startswith("=======") and line.strip("=") == "":
            base = False
        elif not line.startswith(("<<<<<<< ", ">>>>>>> ")) and not base:
            kept.append(line)
    notes.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return True
