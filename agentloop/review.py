"""The reviewer (--review): after the developer's run, a fresh, read-only Claude session reads the
task and the real diff of its change and answers APPROVED or FEEDBACK; feedback goes back to the
developer's session, into the same change, until the reviewer approves or the rounds run out.

- Every reviewer round is a fresh session on `--review-model` that may read files but not change
  them (agents/claude.py READ_ONLY_FLAGS). It knows earlier rounds only from the feedback it is
  shown (agentloop.verdict has the prompt and how its answer is read).
- A fix round resumes the developer's session with the feedback: one run, whose edits land in
  the task's change (jj: the same change; git: the task's one commit at finish).
- Out of rounds, the task is `unapproved`: its change is finished like a completed one and kept
  for the user to judge, and the run goes on.
- A reviewer's failed run, sorted by agentloop.failures: a limit waits (counted against
  --max-limit-waits, like the developer's) and runs the same reviewer again; a blocking error
  stops the run (the task back to pending, its change dropped, no attempt counted); a transient
  or other failure runs the reviewer once more (after --backoff for a transient one), and a
  second failure leaves the task `unapproved`. A reviewer's failure never approves anything.
- A failed fix run is the attempt's failure, and the runner's rules apply (its change dropped,
  retried or failed), except a limit, which waits and runs the same fix again.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Optional, Tuple

from agentloop.agents import Agent, AgentResult, AgentRun
from agentloop.attempt import Attempts
from agentloop.clock import Clock
from agentloop.context import RunContext
from agentloop.errors import AgentBlocked, AgentLoopError, Interrupted
from agentloop.events import (AgentActivity, AgentFinished, AgentStarted, Emit, ReviewStarted,
                              ReviewVerdict)
from agentloop.failures import BLOCKING, LIMIT, TRANSIENT, Failure, classify
from agentloop.project import Project
from agentloop.proc import shielded
from agentloop.report import BLOCKED, FATAL, Report
from agentloop.report import parse as parse_report
from agentloop.state import Attempt, State, TaskState, now
from agentloop.vcs import Change, Vcs
from agentloop.verdict import Verdict, cut_diff, fix_prompt, parse_verdict, review_prompt

if TYPE_CHECKING:
    from agentloop.runner import Options

# Runs of a failing reviewer in one round, beyond the first, before the task is left unapproved
# ("the reviewer failed twice").
REVIEWER_RETRIES = 1
NO_VCS = ("--review needs version control: the reviewer judges the task's diff, and --vcs none "
          "has none; use --vcs auto, jj or git")

# What the runner finishes: the last developer run, its result and report, the status for the
# task (completed or unapproved) and the reason it is unapproved.
Reviewed = Tuple[Attempt, AgentResult, Report, str, Optional[str]]


def _first_line(text: str, limit: int = 160) -> str:
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def unapproved_notes(state: State) -> tuple[str, ...]:
    """For the run's summary: every unapproved task, its kept change and the last feedback."""
    notes = []
    for t in state.tasks:
        if t.status != "unapproved":
            continue
        change = (f"its change {t.change_id[:12]} is kept for you to judge" if t.change_id
                  else "it changed no files")
        feedback = (f"; the reviewer's last feedback: {_first_line(t.feedback)} (agent-loop "
                    "--status shows it all)" if t.feedback else "")
        notes.append(f"task {t.index} is unapproved ({t.error}); {change}{feedback}")
    return tuple(notes)


class Review(RunContext):
    """Reviews each attempt's change before the runner finishes it."""

    def __init__(self, project: Project, state: State, agent: Agent, vcs: Vcs,
                 options: "Options", emit: Emit, clock: Clock, attempts: Attempts,
                 wait_for_limit: Callable[[Failure], None]) -> None:
        if vcs.name == "none":
            raise AgentLoopError(NO_VCS)
        super().__init__(project, state, agent, vcs, options, emit, clock)
        self.attempts = attempts
        self.wait_for_limit = wait_for_limit

    def run(self, task: TaskState, attempt: Attempt, change: Change, result: AgentResult,
            report: Report) -> Reviewed:
        """Review the change until approved or out of rounds; a failed fix run comes back as
        the attempt's result. Stopped midway (Ctrl+C, a blocking error, too many limit waits),
        the change is dropped and the task goes back to wait its turn, no attempt counted."""
        try:
            return self._rounds(task, attempt, change, result, report)
        except BaseException as exc:
            with shielded():
                self._abort(task, attempt, change, exc)
            raise

    def _rounds(self, task: TaskState, developer: Attempt, change: Change, result: AgentResult,
                report: Report) -> Reviewed:
        rounds = self.options.max_review_rounds
        task.feedback, feedback = None, None
        for round_ in range(1, rounds + 1):
            verdict = self._review(task, developer, change, result.text, round_, feedback)
            if isinstance(verdict, str):
                task.feedback = feedback
                return (developer, result, report, "unapproved",
                        f"the reviewer failed twice in round {round_}: {verdict}")
            if verdict.approved:
                return developer, result, report, "completed", None
            developer.outcome, feedback = "feedback", verdict.feedback
            self.save()
            if round_ == rounds:
                task.feedback = feedback
                return (developer, result, report, "unapproved",
                        f"not approved after {rounds} review round{'s' * (rounds > 1)}")
            fix, fixed = self._fix(task, developer, change, round_, feedback)
            report = parse_report(fixed.text) if fixed.ok else Report()
            if not fixed.ok or report.signal in (FATAL, BLOCKED):
                return fix, fixed, report, "completed", None  # the runner's rules take over
            developer, result = fix, fixed
        raise AssertionError("unreachable")

    def _review(self, task: TaskState, developer: Attempt, change: Change, message: str,
                round_: int, feedback: str | None) -> Verdict | str:
        """One reviewer round, run again after a limit or one failure; a str: why it failed."""
        rounds, failures = self.options.max_review_rounds, 0
        while True:
            self.emit(ReviewStarted(task.index, round_, rounds))
            diff, cut = cut_diff(self.vcs.diff(change))
            prompt = review_prompt(task.group, task.task, message, diff, cut, round_, rounds,
                                   feedback)
            record, result = self._run(task, developer, change, "reviewer", round_, prompt)
            if result.ok:
                verdict = parse_verdict(result.text)
                record.verdict = record.outcome = "approved" if verdict.approved else "feedback"
                record.reason = None if verdict.approved else verdict.feedback
                self.save()
                self.emit(ReviewVerdict(task.index, round_, rounds, record.verdict,
                                        record.reason or ""))
                return verdict
            failure = self._failure(result)
            record.reason = failure.reason
            if failure.kind == LIMIT:
                record.outcome = "limited"
                self.save()
                self.wait_for_limit(failure)
                continue
            record.outcome = "blocked" if failure.kind == BLOCKING else "failed"
            self.save()
            if failure.kind == BLOCKING:
                raise AgentBlocked(failure.reason)
            failures += 1
            again = failures <= REVIEWER_RETRIES
            wait = self.options.backoff if again and failure.kind == TRANSIENT else 0.0
            self.emit(ReviewVerdict(task.index, round_, rounds, "failed", failure.reason, again,
                                    wait))
            if not again:
                return failure.reason
            if wait:
                self.clock.sleep(wait)

    def _fix(self, task: TaskState, developer: Attempt, change: Change, round_: int,
             feedback: str) -> tuple[Attempt, AgentResult]:
        """The developer's session, resumed with the feedback; a limit waits and runs it again."""
        prompt = fix_prompt(feedback, round_, self.options.max_review_rounds)
        while True:
            record, result = self._run(task, developer, change, "developer", round_, prompt)
            if result.ok:
                report = parse_report(result.text)
                self.attempts.learnings.record(task.index, 1, now(), report.progress,
                                               report.learnings)
                return record, result
            failure = self._failure(result)
            if failure.kind != LIMIT:
                return record, result
            record.outcome, record.reason = "limited", failure.reason
            self.save()
            self.wait_for_limit(failure)

    def _run(self, task: TaskState, developer: Attempt, change: Change, role: str, round_: int,
             prompt: str) -> tuple[Attempt, AgentResult]:
        """One reviewer or fix run, recorded in the task's history and its own log
        (`…-review1.log`, `…-fix1.log`; a run again in the same round: `…-review1-run2.log`)."""
        reviewer = role == "reviewer"
        before = sum(1 for a in task.history
                     if a.number == developer.number and a.role == role and a.round == round_)
        base = self.project.store.log_path(task.log_name, developer.number)
        name = f"{base.stem}-{'review' if reviewer else 'fix'}{round_}"
        log = base.with_name(name + (f"-run{before + 1}" if before else "") + ".log")
        resume = None if reviewer else developer.session_id or task.session_id
        record = Attempt(number=developer.number, started_at=now(),
                         log=self.project.store.relative(log), resumed=resume is not None,
                         change_id=change.change_id or None, commit_id=change.commit_id or None,
                         role=role, round=round_)
        task.history.append(record)
        task.log = record.log
        self.save()
        self.emit(AgentStarted(record.log or "", resume))
        rounds = self.options.max_review_rounds
        header = (("task", f"{task.index}/{len(self.state.tasks)} {task.summary}"),
                  ("group", task.group), ("attempt", str(task.attempts)), ("role", role),
                  ("review round", f"{round_}/{rounds}"))
        request = AgentRun(prompt=prompt, cwd=self.project.root, log=log,
                           model=self.options.review_model if reviewer else self.options.model,
                           raw_log=log.with_suffix(".jsonl"), resume=resume, header=header,
                           timeout=self.options.task_timeout,
                           budget_usd=self.options.task_budget, read_only=reviewer)
        began = self.clock.monotonic()
        result = self.agent.run(request, lambda text: self.emit(AgentActivity(text)))
        self.attempts._record(task, record, result)  # costs as for any run; sessions: developer's
        self.save()
        self.emit(AgentFinished(result, self.clock.monotonic() - began, record.cost_usd))
        return record, result

    def _failure(self, result: AgentResult) -> Failure:
        return classify(result, datetime.fromtimestamp(self.clock.time(), timezone.utc))

    def _abort(self, task: TaskState, attempt: Attempt, change: Change,
               exc: BaseException) -> None:
        interrupted = isinstance(exc, (Interrupted, KeyboardInterrupt))
        for record in task.history:
            if record.number == attempt.number and record.outcome == "running":
                record.outcome = "interrupted" if interrupted else "stopped"
                record.finished_at = record.finished_at or now()
        task.status = "interrupted" if interrupted else "pending"
        task.error = str(exc) or "interrupted"
        task.attempts -= 1
        self.save()
        self.attempts.drop(change)
        task.change_id = task.commit_id = None
        for record in task.history:
            if record.number == attempt.number:
                record.change_id = record.commit_id = None
        self.save()
