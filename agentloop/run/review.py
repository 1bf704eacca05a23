"""The reviewer (--review): after the developer's run, a fresh, read-only session reads the task
and the real diff of its change and answers APPROVED or FEEDBACK; feedback goes back to the
developer's session, into the same change, until the reviewer approves or the rounds run out.
This module is one round (`judge`, then `fix`); the rounds, with the checks again after each
fix, are the attempt's (agentloop.run.attempt), so review and checks sit side by side.

- Every reviewer round is a fresh session on the review model that may read files but not change
  them (the agent's read-only mode). It knows earlier rounds only from the feedback it is shown
  (agentloop.verdict has the prompt and how its answer is read).
- A fix run resumes the developer's session with the feedback: one run, whose edits land in the
  task's change (jj: the same change; git: the task's one commit at finish).
- Out of rounds, the task is `unapproved`: its change is finished like a completed one and kept
  for the user to judge, and the run goes on.
- A reviewer's failed run: a limit waits (counted against --max-limit-waits, like the
  developer's) and runs the same reviewer again; a blocking error stops the run (the attempt
  around the review drops the change and counts nothing); a transient or other failure runs the
  reviewer once more (after --backoff for a transient one), and a second failure leaves the task
  `unapproved`. A reviewer's failure never approves anything.
- A failed fix run is the attempt's failure, and the runner's rules apply (its change dropped,
  retried or failed), except a limit, which waits and runs the same fix again.
"""

from __future__ import annotations

from collections.abc import Callable

from agentloop.agents import BLOCKING, LIMIT, TRANSIENT, AgentResult
from agentloop.errors import AgentBlocked
from agentloop.run.agent_run import run_agent
from agentloop.run.checks import review_note
from agentloop.run.context import Run
from agentloop.run.decisions import Marked
from agentloop.run.events import ReviewStarted, ReviewVerdict
from agentloop.run.final_message import first_line
from agentloop.run.fixes import Outcome, fix_run
from agentloop.run.handover import hand
from agentloop.run.lane_tag import LaneNote
from agentloop.run.review_prompt import Verdict, cut_diff, fix_prompt, parse_verdict, review_prompt
from agentloop.run.waits import classify, wait_for_limit
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import Attempt, State, TaskState
from agentloop.state.status import TaskStatus as S

# Runs of a failing reviewer in one round, beyond the first, before the task is left unapproved
# ("the reviewer failed twice").
REVIEWER_RETRIES = 1


def unapproved_notes(state: State, name: Callable[[int], str]) -> tuple[str, ...]:
    """For the run's summary: every unapproved task, its kept change and the last feedback;
    `name` says a task by its number in the run (as the plan reads now: names_now.Names)."""
    notes = []
    for t in state.tasks:
        if t.status != S.UNAPPROVED:
            continue
        change = (f"its change {t.change_id[:12]} is kept for you to judge" if t.change_id
                  else "it changed no files")
        feedback = (f"; the reviewer's last feedback: {first_line(t.feedback)} (agent-loop "
                    "--status shows it all)" if t.feedback else "")
        notes.append(f"{name(t.index)} is unapproved ({t.error}); {change}{feedback}")
    return tuple(notes)


def read_back(run: Run, task: TaskState, record: Attempt, result: AgentResult) -> None:
    """A reviewer's run a kill cut off after it ended well, read back from its raw log
    (agentloop.run.recovery.recover): its verdict goes into its record, which the attempt's
    uncounting then marks interrupted as the rest, for `judge` to take up in the next run."""
    verdict = parse_verdict(result.text)
    word = O.APPROVED if verdict.approved else O.FEEDBACK
    hand(run, task, Marked(record, record.outcome, None if verdict.approved else
                           verdict.feedback, word, save=False))


def _judged_before(task: TaskState, number: int, round_: int) -> Attempt | None:
    """The reviewer's run of this round whose verdict a stopped run recorded (read back after
    a kill, or given before a Ctrl+C), when nothing ran after it: the work it judged is the
    work brought back, so its verdict stands and the reviewer is not paid again."""
    last = task.history[-1] if task.history else None
    if last is None or last.role != "reviewer" or last.number != number or \
            last.round != round_ or last.exit_code != 0 or \
            last.verdict not in (O.APPROVED, O.FEEDBACK):
        return None
    return last


def judge(run: Run, task: TaskState, outcome: Outcome, round_: int,
            feedback: str | None) -> Verdict | str:
    """One reviewer round, run again after a limit or one failure; a str: why it failed."""
    rounds, failures = run.options.max_review_rounds, 0
    developer = outcome.attempt
    before = _judged_before(task, developer.number, round_)
    if before is not None:
        approved = before.verdict == O.APPROVED
        run.emit(LaneNote(f"task {task.index}: the reviewer's verdict of round {round_} in the "
                          "last run stands, and the reviewer is not paid again"))
        word, reason = (O.APPROVED, None) if approved else (O.FEEDBACK, before.reason or "")
        hand(run, task, Marked(before, word, reason, word, ReviewVerdict(
            task.index, round_, rounds, word, reason or "")))
        return Verdict(approved, "" if approved else reason or "")
    while True:
        run.emit(ReviewStarted(task.index, round_, rounds))
        diff, cut = cut_diff(run.vcs.diff(outcome.change))
        prompt = review_prompt(task.group, task.task, outcome.result.text, diff, cut, round_,
                               rounds, feedback) + review_note(outcome.checks)
        record, result = run_agent(run, task, outcome.change, prompt, developer.number,
                                   role="reviewer", round_=round_)
        if result.ok:
            verdict = parse_verdict(result.text)
            word = O.APPROVED if verdict.approved else O.FEEDBACK
            reason = None if verdict.approved else verdict.feedback
            hand(run, task, Marked(record, word, reason, word, ReviewVerdict(
                task.index, round_, rounds, word, reason or "")))
            return verdict
        failure = classify(run, result)
        hand(run, task, Marked(record, {LIMIT: O.LIMITED, BLOCKING: O.BLOCKED}.get(
            failure.kind, O.FAILED), failure.reason, resets_at=failure.resets_at))
        if failure.kind == LIMIT:
            wait_for_limit(run, failure)
            continue
        if failure.kind == BLOCKING:
            raise AgentBlocked(failure.reason)
        failures += 1
        again = failures <= REVIEWER_RETRIES
        wait = run.options.backoff if again and failure.kind == TRANSIENT else 0.0
        run.emit(ReviewVerdict(task.index, round_, rounds, "failed", failure.reason, again,
                               wait))
        if not again:
            return failure.reason
        if wait:
            run.clock.sleep(wait)


def fix(run: Run, task: TaskState, outcome: Outcome, round_: int, feedback: str) -> Outcome:
    """The developer's session, resumed with the feedback; a limit waits and runs it again."""
    return fix_run(run, task, outcome, fix_prompt(feedback, round_, run.options.max_review_rounds),
                   round_)
