"""The loop over groups and tasks, written against the Agent and Vcs protocols only.

Every status change is saved before the next step starts, so a kill at any moment leaves a state
from which a re-run resumes: `running` or `interrupted` tasks run again, completed ones never do.

A failed attempt is classified (agentloop.failures): a usage limit waits and is no attempt, a
blocking error stops the run, a transient one is retried after a backoff, anything else goes to
the retry advisor. A task gets at most `max_attempts` attempts in all, whatever the advice.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from agentloop.agents import Agent
from agentloop.clock import Clock, SystemClock
from agentloop.context import RunContext
from agentloop.distill import Message
from agentloop.errors import AgentBlocked, AgentLoopError, BudgetReached, Interrupted, RunStopped
from agentloop import receipts
from agentloop.attempt import Attempts
from agentloop.events import (Emit, LimitWait, MessageDistilled, RetryDecided, RunFinished,
                              RunStarted, TaskFinished)
from agentloop.failures import Failure, classify
from agentloop.plan import commit_message, runnable
from agentloop.proc import shielded
from agentloop.project import Project
from agentloop.report import BLOCKED, FATAL
from agentloop.retry import MAX_ATTEMPTS, Advice
from agentloop.review import Review, unapproved_notes
from agentloop.state import Attempt, State, TaskState, now
from agentloop.vcs import Change, Vcs

# Transient failures of one task in a row before the run pauses instead of burning attempts.
TRANSIENT_PAUSE = 3
# A limit wait without a reset time backs off from `backoff` seconds, doubling, up to this.
MAX_BACKOFF = 3600.0
# Seconds added to a reported reset time, so we do not knock a moment too early.
RESET_MARGIN = 5.0
# Runs of the tool in a row a task may start without completing before the summary flags it.
STALL_RUNS = 3
# The CLI's result subtype for a run cut short by --max-budget-usd (measured on 2.1.330).
BUDGET_CUT = "error_max_budget_usd"

Advisor = Callable[..., Advice]
Distiller = Callable[..., Message]


@dataclass(frozen=True)
class Options:
    """How to run: the model, limits on runs and attempts, and waits."""

    model: str = "opus"
    task_timeout: float | None = 7200.0
    max_attempts: int = MAX_ATTEMPTS
    max_limit_waits: int = 5
    max_failures_in_row: int = 3
    backoff: float = 30.0
    iterations: int = 1
    sleep: float = 0.0
    budget: float | None = None        # USD for everything spent on this task file
    task_budget: float | None = None   # USD, the CLI's own cap on one run
    review: bool = False               # a reviewer checks each task's change (agentloop.review)
    review_model: str = "sonnet"
    max_review_rounds: int = 3


class Runner(RunContext):
    """Runs the unfinished tasks of one project, saving the state after every step."""

    def __init__(self, project: Project, state: State, agent: Agent, vcs: Vcs, options: Options,
                 emit: Emit, advisor: Advisor, clock: Clock | None = None,
                 distiller: Distiller | None = None) -> None:
        super().__init__(project, state, agent, vcs, options, emit, clock or SystemClock())
        self.advisor = advisor
        self.distiller = distiller
        self.limit_waits = 0
        self.failed_in_row: list[int] = []
        self.attempts = Attempts(project, state, agent, vcs, options, emit, self.clock)
        self.review = (Review(project, state, agent, vcs, options, emit, self.clock,
                              self.attempts, self._wait_for_limit) if options.review else None)

    def run(self, notes: tuple[str, ...] = (), only: int | None = None) -> RunFinished:
        """Run every unfinished task in order (or only task `only`); return the summary."""
        started = self.clock.monotonic()
        self.state.vcs = self.vcs.name
        if only is not None:
            pending = [self.state.tasks[only - 1]]
        else:
            pending = [t for t in self.state.tasks if runnable(t, self.options.max_attempts)]
        self.emit(RunStarted(len(pending), len(self.state.tasks), self.vcs.name, notes))
        self.save()
        stopped, begun = None, []
        try:
            for position, task in enumerate(pending):
                if position and self.options.sleep:
                    self.clock.sleep(self.options.sleep)  # pacing; Ctrl+C ends it at once
                if self._recover(task):
                    continue
                begun.append(task)
                self._run_task(task)
                self._check_stuck(task)
        except BaseException as exc:
            stopped = ("interrupted" if isinstance(exc, (Interrupted, KeyboardInterrupt))
                       else str(exc) or type(exc).__name__)
            raise
        finally:
            # Leave the working copy in no task's change, whatever happened.
            with shielded():
                try:
                    self.vcs.close()
                except AgentLoopError as exc:
                    stopped = stopped or str(exc)
                stalled = self._count_stalls(begun)
            summary = self._summary(started, stopped, stalled)
            self.emit(summary)
        return summary

    def _count_stalls(self, begun: list[TaskState]) -> tuple[str, ...]:
        """Count the runs each started task has gone without completing; report the stuck ones."""
        for task in begun:
            task.stalled_runs = 0 if task.status == "completed" else task.stalled_runs + 1
        try:
            self.save()
        except AgentLoopError:
            pass
        return tuple(
            f"task {t.index} has started in {t.stalled_runs} runs in a row without completing "
            f"({t.status}: {t.error or 'no reason recorded'}); read {t.log} and consider "
            "rewording or splitting it"
            for t in self.state.tasks if t.stalled_runs >= STALL_RUNS)

    def _recover(self, task: TaskState) -> bool:
        """Settle what an earlier run left of this task; True when that finished it."""
        if task.status != "running" and task.status != "interrupted":
            return False
        done = self.vcs.recovered() if task.status == "running" else None
        if done is not None and task.history:
            # The earlier run committed this task and was killed before saving it as done.
            attempt = task.history[-1]
            task.status = attempt.outcome = "completed"
            task.change_id = attempt.change_id = done.change_id or None
            task.commit_id = attempt.commit_id = done.commit_id or None
            task.files, task.error = list(done.files), None
            attempt.finished_at = task.finished_at = now()
            self.save()
            self.emit(TaskFinished(task.index, task.status, task.change_id, len(task.files), None))
            return True
        if task.status == "running" and task.history and task.history[-1].outcome == "running":
            # Killed inside the agent: like Ctrl+C, that attempt does not count.
            task.history[-1].outcome, task.history[-1].finished_at = "interrupted", now()
            task.status = "interrupted"
            task.attempts = max(0, task.attempts - 1)
        # A task left running or interrupted has a change holding a partial attempt; drop it
        # so history keeps only attempts that counted.
        if task.change_id is not None:
            self.attempts.drop(Change(change_id=task.change_id, commit_id=task.commit_id or ""))
            task.change_id = task.commit_id = None
            self.save()
        return False

    def _run_task(self, task: TaskState) -> None:
        hint, fresh, transient_in_row, previous_error = "", False, 0, None
        while True:
            self._check_budget(task)
            attempt, change, result, report = self.attempts.run(task, hint, fresh)
            status, note = "completed", None
            if self.review is not None and result.ok and report.signal not in (FATAL, BLOCKED):
                attempt, result, report, status, note = self.review.run(task, attempt, change,
                                                                        result, report)
            if result.ok and report.signal == FATAL:
                self.attempts.drop(change)
                attempt.outcome, task.status = "stopped", "pending"
                task.change_id = task.commit_id = attempt.change_id = attempt.commit_id = None
                task.error = attempt.reason = f"{FATAL}: {report.reason}"
                self.save()
                raise RunStopped(f"the agent reported a fatal error on task {task.index}: "
                                 f"{report.reason or 'no reason given'}")
            if result.ok and report.signal == BLOCKED:
                self.attempts.drop(change)
                attempt.outcome = task.status = "blocked"
                task.change_id = task.commit_id = attempt.change_id = attempt.commit_id = None
                task.error = attempt.reason = report.reason or "blocked, no reason given"
                task.session_id = result.session_id  # the group's chain goes on from here
                task.finished_at = now()
                self.save()
                self.emit(TaskFinished(task.index, task.status, None, 0, task.error))
                return
            if result.ok:
                self._complete(task, attempt, change, result.text, status, note)
                return
            self.attempts.drop(change)
            task.change_id = task.commit_id = attempt.change_id = attempt.commit_id = None
            if result.subtype == BUDGET_CUT:
                attempt.outcome, attempt.reason = "budget", f"cut short by its own budget " \
                    f"(--task-budget {self.options.task_budget:g} USD)"
                self._fail(task, attempt.reason)
                return
            failure = classify(result, datetime.fromtimestamp(self.clock.time(), timezone.utc))
            attempt.reason = failure.reason
            if failure.kind in ("limit", "blocking"):
                # Not the task's fault: not an attempt, and the task waits its turn again.
                attempt.outcome = "limited" if failure.kind == "limit" else "blocked"
                task.attempts -= 1
                task.status, task.error = "pending", failure.reason
                self.save()
                if failure.kind == "blocking":
                    raise AgentBlocked(failure.reason)
                self._wait_for_limit(failure)
                continue
            attempt.outcome = "failed"
            task.error = failure.reason
            if task.attempts >= self.options.max_attempts:
                self._fail(task, f"{failure.reason} (gave up after {task.attempts} attempts)")
                return
            if failure.kind == "transient":
                transient_in_row += 1
                if transient_in_row >= TRANSIENT_PAUSE:
                    task.status = "pending"
                    self.save()
                    raise RunStopped(f"paused: {transient_in_row} transient failures in a row "
                                     f"on task {task.index} ({failure.reason})")
                wait = self.options.backoff * 2 ** (transient_in_row - 1)
                self._decide(task, attempt, Advice(True, failure.reason, "", "backoff"),
                             "transient", wait)
                self.clock.sleep(wait)
                hint, fresh = "", True
                continue
            transient_in_row = 0
            advice = self.advisor(task=task.task, attempt=task.attempts,
                                  max_attempts=self.options.max_attempts, error=failure.reason,
                                  exit_code=result.exit_code, log_tail=self.attempts.log_tail(attempt),
                                  previous_error=previous_error)
            previous_error = failure.reason
            attempt.helper_cost_usd = round(attempt.helper_cost_usd + advice.cost_usd, 6)
            task.cost_usd = round(task.cost_usd + advice.cost_usd, 6)
            self._decide(task, attempt, advice, "other", 0.0)
            if not advice.retry:
                self._fail(task, advice.reason or failure.reason)
                return
            hint, fresh = advice.hint, True

    def _complete(self, task: TaskState, attempt: Attempt, change: Change,
                  final: str = "", status: str = "completed", note: str | None = None) -> None:
        message = commit_message(task)
        if self.distiller is not None and self.vcs.name != "none":
            distilled = self.distiller(plain=message, group=task.group, task=task.task,
                                       final=final, diff=self.vcs.diff(change))
            attempt.helper_cost_usd = round(attempt.helper_cost_usd + distilled.cost_usd, 6)
            task.cost_usd = round(task.cost_usd + distilled.cost_usd, 6)
            message = distilled.text
            self.emit(MessageDistilled(task.index, distilled.distilled,
                                       message.splitlines()[0], distilled.note))
        if note:  # kept for the user to judge: the history says so too
            message += f"\n\n{status}: {note}"
        done = self.vcs.finish(change, message)
        if done.empty:  # nothing changed: no change to record (backends drop an empty one)
            done = Change(change_id="", empty=True)
        task.status = attempt.outcome = status  # or unapproved: out of review rounds, kept
        task.change_id = attempt.change_id = done.change_id or None
        task.commit_id = attempt.commit_id = done.commit_id or None
        task.files, task.error = list(done.files), note
        attempt.finished_at = task.finished_at = now()
        self.failed_in_row = []
        self.save()
        self.emit(TaskFinished(task.index, task.status, task.change_id, len(task.files), note))

    def _fail(self, task: TaskState, reason: str) -> None:
        task.status, task.error, task.files = "failed", reason, []
        task.history[-1].finished_at = task.finished_at = now()
        self.failed_in_row.append(task.index)
        self.save()
        self.emit(TaskFinished(task.index, task.status, None, 0, reason))

    def _decide(self, task: TaskState, attempt: Attempt, advice: Advice, kind: str,
                wait: float) -> None:
        attempt.finished_at = now()
        attempt.hint = advice.hint or None
        if kind == "other":
            attempt.reason = f"{attempt.reason} | advice ({advice.source}): {advice.reason}"
        self.save()
        self.emit(RetryDecided(task.index, task.attempts, advice.retry, kind, advice.reason,
                               advice.hint, advice.source, wait))

    def _wait_for_limit(self, failure: Failure) -> None:
        self.limit_waits += 1
        if self.limit_waits > self.options.max_limit_waits:
            raise RunStopped(f"usage limit: waited {self.options.max_limit_waits} times already "
                             f"({failure.reason})")
        if failure.resets_at is not None:
            seconds = max(0.0, failure.resets_at - self.clock.time()) + RESET_MARGIN
        else:
            seconds = min(MAX_BACKOFF, self.options.backoff * 2 ** (self.limit_waits - 1))
        self.emit(LimitWait(failure.reason, seconds, self.clock.time() + seconds,
                            self.limit_waits, self.options.max_limit_waits))
        self.clock.sleep(seconds)

    def _check_budget(self, task: TaskState) -> None:
        """Start no attempt once everything spent on this task file has reached --budget."""
        if self.options.budget is None:
            return
        spent = round(sum(t.cost_usd for t in self.state.tasks), 6)
        if spent >= self.options.budget:
            raise BudgetReached(f"budget reached before task {task.index}: spent "
                                f"${spent:.4f} of ${self.options.budget:g}", spent,
                                self.options.budget)

    def _check_stuck(self, task: TaskState) -> None:
        if len(self.failed_in_row) >= self.options.max_failures_in_row:
            tasks = ", ".join(str(i) for i in self.failed_in_row)
            raise RunStopped(f"the agent seems stuck: {len(self.failed_in_row)} tasks failed in "
                             f"a row (tasks {tasks}); read their logs (agent-loop --status lists "
                             "them) and fix the cause")

    def _summary(self, started: float, stopped: str | None,
                 notes: tuple[str, ...]) -> RunFinished:
        counts = Counter(t.status for t in self.state.tasks)
        spent = receipts.total(self.state.tasks)
        return RunFinished(counts=tuple(sorted(counts.items())),
                           tokens=tuple((k, getattr(spent, k)) for k in receipts.TOKENS),
                           cost_usd=round(sum(t.cost_usd for t in self.state.tasks), 6),
                           seconds=self.clock.monotonic() - started,
                           logs=self.project.store.relative(self.project.store.logs),
                           stopped=stopped, notes=notes + unapproved_notes(self.state))
