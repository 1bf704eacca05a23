"""The loop over groups and tasks, written against the Agent and Vcs protocols only.

Every status change is saved before the next step starts, so a kill at any moment leaves a state
from which a re-run resumes: `running` or `interrupted` tasks run again, completed ones never do.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from agentloop.agents import Agent, AgentResult, AgentRun
from agentloop.errors import Interrupted
from agentloop.events import (AgentActivity, AgentFinished, AgentStarted, ChangeAbandoned,
                              ChangeCreated, Emit, RunFinished, RunStarted, TaskFinished,
                              TaskStarted)
from agentloop.project import Project
from agentloop.state import Attempt, State, TaskState, now
from agentloop.vcs import Change, Vcs

DONE = ("completed", "skipped")
RETRY_NOTE = ("Note: an earlier attempt at this task was stopped before it finished, and its "
              "file changes were discarded. Start the task again from the current files.\n\n")


@dataclass(frozen=True)
class Options:
    """How to run: the model, and the limit on one agent run."""

    model: str = "opus"
    task_timeout: float | None = None


def previous_in_group(state: State, task: TaskState) -> TaskState | None:
    """The task run before this one in its group, passing over tasks the author checked off."""
    for earlier in reversed(state.tasks[: task.index - 1]):
        if earlier.group != task.group:
            return None
        if earlier.status != "skipped":
            return earlier
    return None


def resume_session(state: State, task: TaskState) -> str | None:
    """The session a task continues: its group's previous task's, if that one completed.

    A failed task breaks the chain, so the next task starts fresh.
    """
    previous = previous_in_group(state, task)
    if previous is not None and previous.status == "completed":
        return previous.session_id
    return None


def session_plan(state: State) -> list[tuple[TaskState, str]]:
    """For --dry-run: each task with how it would run (done, new or continued session)."""
    plan = []
    will_run: set[int] = set()
    for task in state.tasks:
        if task.status == "completed":
            plan.append((task, "done"))
            continue
        if task.status == "skipped":
            plan.append((task, "skipped (checked off in the task file)"))
            continue
        session = resume_session(state, task)
        previous = previous_in_group(state, task)
        if session:
            how = f"resumes session {session}"
        elif previous is not None and previous.index in will_run:
            how = "continues the group's session"
        else:
            how = "starts a fresh session"
        will_run.add(task.index)
        plan.append((task, how))
    return plan


def commit_message(task: TaskState) -> str:
    """The description of a task's change."""
    return f"agent-loop: {task.group} / {task.summary}"


class Runner:
    """Runs the unfinished tasks of one project, saving the state after every step."""

    def __init__(self, project: Project, state: State, agent: Agent, vcs: Vcs, options: Options,
                 emit: Emit, clock: Callable[[], float] = time.monotonic) -> None:
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

    def run(self, notes: tuple[str, ...] = ()) -> RunFinished:
        """Run every unfinished task in order; return the summary (also emitted)."""
        started = self.clock()
        self.state.vcs = self.vcs.name
        pending = [t for t in self.state.tasks if t.status not in DONE]
        self.emit(RunStarted(len(pending), len(self.state.tasks), self.vcs.name, notes))
        self.save()
        stopped = None
        try:
            for task in pending:
                self._recover(task)
                self._attempt(task)
        except Interrupted:
            stopped = "interrupted"
            raise
        finally:
            if stopped is None:
                self.vcs.close()
            summary = self._summary(started, stopped)
            self.emit(summary)
        return summary

    def _recover(self, task: TaskState) -> None:
        # A task left running or interrupted by an earlier run has a change holding a partial
        # attempt; drop it so history keeps only attempts that counted.
        if task.status in ("running", "interrupted") and task.change_id is not None:
            self.vcs.abandon(self._change(task))
            self.emit(ChangeAbandoned(self.vcs.name, task.change_id))
            task.change_id = task.commit_id = None
            self.save()

    def _change(self, task: TaskState) -> Change:
        return Change(change_id=task.change_id or "", commit_id=task.commit_id or "")

    def _attempt(self, task: TaskState) -> None:
        number = task.attempts + 1
        self.emit(TaskStarted(task.index, len(self.state.tasks), task.group, task.summary, number))
        resume = resume_session(self.state, task)
        prompt = task.task
        if task.history and task.history[-1].outcome in ("interrupted", "running"):
            prompt = RETRY_NOTE + prompt
        change = self.vcs.begin(commit_message(task))
        if change.change_id:
            self.emit(ChangeCreated(self.vcs.name, change.change_id))
        log = self.project.store.log_path(task.log_name, number)
        attempt = Attempt(number=number, started_at=now(), log=self.project.store.relative(log),
                          resumed=resume is not None, change_id=change.change_id or None,
                          commit_id=change.commit_id or None)
        task.history.append(attempt)
        task.attempts = number
        task.status, task.started_at, task.finished_at = "running", attempt.started_at, None
        task.change_id, task.commit_id = change.change_id or None, change.commit_id or None
        task.log, task.error = attempt.log, None
        self.save()
        self.emit(AgentStarted(attempt.log or "", resume))
        request = AgentRun(prompt=prompt, model=self.options.model, cwd=self.project.root,
                           log=log, raw_log=log.with_suffix(".jsonl"), resume=resume,
                           header=(("task", f"{task.index}/{len(self.state.tasks)} {task.summary}"),
                                   ("group", task.group), ("attempt", str(number))),
                           timeout=self.options.task_timeout)
        began = self.clock()
        try:
            result = self.agent.run(request, lambda text: self.emit(AgentActivity(text)))
        except Interrupted:
            attempt.outcome = task.status = "interrupted"
            attempt.finished_at = now()
            task.error = "interrupted"
            self.save()
            raise
        self._record(task, attempt, result)
        self.emit(AgentFinished(result, self.clock() - began, attempt.cost_usd))
        if result.ok:
            done = self.vcs.finish(change, commit_message(task))
            task.status = attempt.outcome = "completed"
            task.change_id = attempt.change_id = done.change_id or None
            task.commit_id = attempt.commit_id = done.commit_id or None
            task.files = list(done.files)
        else:
            self.vcs.abandon(change)
            if change.change_id:
                self.emit(ChangeAbandoned(self.vcs.name, change.change_id))
            task.status = attempt.outcome = "failed"
            task.error = attempt.reason = result.error
            task.change_id = task.commit_id = None
            task.files = []
        attempt.finished_at = task.finished_at = now()
        self.save()
        self.emit(TaskFinished(task.index, task.status, task.change_id, len(task.files), task.error))

    def _session_cost(self, session_id: str | None) -> float:
        return max((a.session_cost_usd for t in self.state.tasks for a in t.history
                    if session_id and a.session_id == session_id), default=0.0)

    def _record(self, task: TaskState, attempt: Attempt, result: AgentResult) -> None:
        # total_cost_usd accumulates over a resumed session (measured on the real CLI), so a
        # run's own cost is what it added to the session's total so far.
        before = self._session_cost(result.session_id) if attempt.resumed else 0.0
        attempt.session_id = result.session_id
        attempt.session_cost_usd = result.cost_usd
        attempt.cost_usd = round(max(0.0, result.cost_usd - before), 6)
        attempt.usage = dict(result.usage)
        attempt.num_turns = result.num_turns
        attempt.duration_ms = result.duration_ms
        attempt.exit_code = result.exit_code
        task.cost_usd = round(sum(a.cost_usd for a in task.history), 6)
        if result.ok:
            task.session_id = result.session_id

    def _summary(self, started: float, stopped: str | None) -> RunFinished:
        counts = Counter(t.status for t in self.state.tasks)
        return RunFinished(counts=tuple(sorted(counts.items())),
                           cost_usd=round(sum(t.cost_usd for t in self.state.tasks), 6),
                           seconds=self.clock() - started,
                           logs=self.project.store.relative(self.project.store.logs),
                           stopped=stopped)
