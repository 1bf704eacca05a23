"""One attempt of a task: its change, its prompt, and one agent run (or several iterations in
one session), each recorded in the state and its own log before and after it runs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentloop.agents import Agent, AgentResult, AgentRun
from agentloop.clock import Clock
from agentloop.context import RunContext
from agentloop.errors import Interrupted
from agentloop.events import (AgentActivity, AgentFinished, AgentStarted, ChangeAbandoned,
                              ChangeCreated, Emit, TaskStarted)
from agentloop.learnings import Learnings
from agentloop.plan import commit_message, resume_session
from agentloop.proc import shielded
from agentloop.project import Project
from agentloop.report import Report
from agentloop.report import parse as parse_report
from agentloop.state import Attempt, State, TaskState, now
from agentloop.vcs import Change, Vcs

if TYPE_CHECKING:
    from agentloop.runner import Options

RETRY_NOTE = ("Note: an earlier attempt at this task was stopped before it finished, and its "
              "file changes were discarded. Start the task again from the current files.\n\n")
COMPLETE_NOTE = ("This task may take several turns. When it is fully done, end your final "
                 "message with the line TASK_COMPLETE.")
CONTINUE_PROMPT = ("Continue with the same task. Your progress so far:\n{progress}\n\n"
                   "Keep going; when the task is fully done, end your final message with the "
                   "line TASK_COMPLETE.")


class Attempts(RunContext):
    """Runs attempts of tasks; the runner decides what to do with their results."""

    def __init__(self, project: Project, state: State, agent: Agent, vcs: Vcs,
                 options: "Options", emit: Emit, clock: Clock) -> None:
        super().__init__(project, state, agent, vcs, options, emit, clock)
        self.learnings = Learnings(project.store.dir)

    def run(self, task: TaskState, hint: str,
                 fresh: bool) -> tuple[Attempt, Change, AgentResult, Report]:
        """One attempt: a change, and one agent run, or up to `iterations` runs in one session
        until the agent says TASK_COMPLETE."""
        task.attempts += 1
        # Retries run in a fresh session: the failed attempt's edits are gone, and its
        # conversation would tell the agent otherwise.
        resume = None if fresh else resume_session(self.state, task)
        prompt = task.task
        if task.history and task.history[-1].outcome in ("interrupted", "running"):
            prompt = RETRY_NOTE + prompt
        if hint:
            prompt += (f"\n\nAn earlier attempt at this task failed ({task.error}). "
                       f"Advice for this attempt: {hint}")
        if resume is None:
            prompt = self.learnings.for_prompt() + prompt
        if self.options.iterations > 1:
            prompt += "\n\n" + COMPLETE_NOTE
        change = self.vcs.begin(commit_message(task))
        if change.change_id:
            self.emit(ChangeCreated(self.vcs.name, change.change_id))
        task.status, task.started_at, task.finished_at = "running", now(), None
        task.change_id, task.commit_id = change.change_id or None, change.commit_id or None
        task.error = None
        iterations = self.options.iterations
        for iteration in range(1, iterations + 1):
            attempt, result = self._agent_run(task, change, prompt, resume, iteration)
            report = parse_report(result.text) if result.ok else Report()
            if result.ok:
                self.learnings.record(task.index, iteration, now(), report.progress,
                                      report.learnings)
            if not result.ok or report.signal is not None or iterations == 1:
                return attempt, change, result, report
            if iteration == iterations:
                # Spent without TASK_COMPLETE: judged like any failed attempt.
                spent = replace(result, ok=False, error=f"not complete after {iterations} "
                                "iterations (no TASK_COMPLETE)")
                return attempt, change, spent, report
            attempt.outcome = "continued"
            self.save()
            resume = result.session_id
            prompt = CONTINUE_PROMPT.format(progress=report.progress or "(none reported)")
        raise AssertionError("unreachable")

    def _agent_run(self, task: TaskState, change: Change, prompt: str, resume: str | None,
                   iteration: int) -> tuple[Attempt, AgentResult]:
        """Run the agent once, recorded as its own entry of the task's history and log."""
        runs = sum(1 for a in task.history if a.iteration == 1 and not a.round)
        number = runs + 1 if iteration == 1 else runs
        self.emit(TaskStarted(task.index, len(self.state.tasks), task.group, task.summary,
                              task.attempts, iteration))
        log = self.project.store.log_path(task.log_name, number, iteration)
        attempt = Attempt(number=number, started_at=now(), log=self.project.store.relative(log),
                          iteration=iteration, resumed=resume is not None,
                          change_id=change.change_id or None, commit_id=change.commit_id or None)
        task.history.append(attempt)
        task.log = attempt.log
        self.save()
        self.emit(AgentStarted(attempt.log or "", resume))
        header: tuple[tuple[str, str], ...] = (
            ("task", f"{task.index}/{len(self.state.tasks)} {task.summary}"),
            ("group", task.group), ("attempt", str(task.attempts)))
        if self.options.iterations > 1:
            header += (("iteration", f"{iteration}/{self.options.iterations}"),)
        request = AgentRun(prompt=prompt, model=self.options.model, cwd=self.project.root,
                           log=log, raw_log=log.with_suffix(".jsonl"), resume=resume,
                           header=header, timeout=self.options.task_timeout,
                           budget_usd=self.options.task_budget)
        began = self.clock.monotonic()
        try:
            result = self.agent.run(request, lambda text: self.emit(AgentActivity(text)))
        except BaseException as exc:
            # Stopped by the user, or the agent cannot run at all: not the task's attempt.
            # Its change goes now, so edits the user makes before the next run stay theirs.
            interrupted = isinstance(exc, (Interrupted, KeyboardInterrupt))
            with shielded():
                attempt.outcome = "interrupted" if interrupted else "blocked"
                task.status = "interrupted" if interrupted else "pending"
                attempt.finished_at, task.error = now(), str(exc) or "interrupted"
                task.attempts -= 1
                self.save()
                self.drop(change)
                task.change_id = task.commit_id = attempt.change_id = attempt.commit_id = None
                self.save()
            raise
        self._record(task, attempt, result)
        self.emit(AgentFinished(result, self.clock.monotonic() - began, attempt.cost_usd))
        return attempt, result

    def _record(self, task: TaskState, attempt: Attempt, result: AgentResult) -> None:
        # total_cost_usd accumulates over a resumed session (measured on the real CLI), so a
        # run's own cost is what it added to the session's total so far.
        before = self._session_cost(result.session_id) if attempt.resumed else 0.0
        attempt.session_id = result.session_id
        attempt.session_cost_usd = result.cost_usd
        attempt.cost_usd = round(max(0.0, result.cost_usd - before), 6)
        attempt.usage = dict(result.usage)
        attempt.model = result.model
        attempt.num_turns = result.num_turns
        attempt.duration_ms = result.duration_ms
        attempt.exit_code = result.exit_code
        attempt.finished_at = now()
        task.cost_usd = round(task.cost_usd + attempt.cost_usd, 6)
        if result.ok and attempt.role == "developer":  # never the reviewer's session
            task.session_id = result.session_id

    def _session_cost(self, session_id: str | None) -> float:
        return max((a.session_cost_usd for t in self.state.tasks for a in t.history
                    if session_id and a.session_id == session_id), default=0.0)

    def log_tail(self, attempt: Attempt, limit: int = 4000) -> str:
        try:
            text = (self.project.root / (attempt.log or "")).read_text(encoding="utf-8",
                                                                       errors="replace")
        except OSError:
            return ""
        return text[-limit:]

    def drop(self, change: Change) -> None:
        self.vcs.abandon(change)
        if change.change_id:
            self.emit(ChangeAbandoned(self.vcs.name, change.change_id))
