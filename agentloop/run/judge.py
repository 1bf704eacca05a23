"""What a failed attempt comes to (agentloop.run.decisions): its own budget, a pause, a blocking
error or a usage limit by rule, a give-up once `max_attempts` are spent, a backoff after a
transient failure (a pause after several in a row), and anything else as the retry advisor
(agentloop.run.retry) says. A lane (agentloop.run.lane) asks after each failed attempt and hands
the answer to the controller; no record changes here."""

from __future__ import annotations

from pathlib import Path

from agentloop.agents import BLOCKING, BUDGET, LIMIT, TRANSIENT
from agentloop.run.context import Run
from agentloop.run.decisions import Decision, Failed, Retry, Stop, WaitFor
from agentloop.run.fixes import Outcome
from agentloop.run.waits import classify, excused_by_a_pause
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import TaskState

# Transient failures of one task in a row before the run pauses instead of burning attempts.
TRANSIENT_PAUSE = 3


def judge(run: Run, task: TaskState, outcome: Outcome, transient: int,
          previous_error: str | None) -> Decision:
    """What a failed attempt comes to (agentloop.run.decisions); no record changes here. The
    retry advisor is asked here, when the rules leave it to the advisor."""
    attempt, result = outcome.attempt, outcome.result
    failure = outcome.failure or classify(run, result)
    if failure.kind == BUDGET:
        # A cap agent-loop did not set (a `claude` wrapper of the user's adds one) has no flag
        # to name: the agent's own words say it.
        cap = run.options.task_budget
        why = (failure.reason if cap is None
               else f"cut short by its own budget (--task-budget {cap:g} USD)")
        return Failed(why, O.BUDGET, why)
    if excused_by_a_pause(run, result, failure):
        return WaitFor(O.PAUSED, failure.reason, paused=result.paused)
    if failure.kind == BLOCKING:
        return Stop(failure.reason, blocked=True, counted=False)
    if failure.kind == LIMIT:
        return WaitFor(O.LIMITED, failure.reason, failure)
    if task.attempts >= run.options.max_attempts:
        return Failed(f"{failure.reason} (gave up after {task.attempts} attempts)",
                      attempt_reason=failure.reason)
    if failure.kind == TRANSIENT:
        transient += 1
        if transient >= TRANSIENT_PAUSE:
            return Stop(f"paused: {transient} transient failures in a row on task "
                        f"{task.index} ({failure.reason})", error=failure.reason)
        return Retry(failure.reason, failure.reason, "", "transient", failure.reason, "backoff",
                     wait=run.options.backoff * 2 ** (transient - 1), transient=transient,
                     error=previous_error)
    advice = run.advisor(task=task.task, attempt=task.attempts,
                         max_attempts=run.options.max_attempts, error=failure.reason,
                         exit_code=result.exit_code,
                         log_tail=_tail(run.project.root / (attempt.log or "")),
                         previous_error=previous_error)
    said = Retry(f"{failure.reason} | advice ({advice.source}): {advice.reason}",
                 failure.reason, advice.hint, "other", advice.reason, advice.source,
                 error=failure.reason, helper_cost=advice.cost_usd)
    if not advice.retry:
        return Failed(advice.reason or failure.reason, attempt_reason=said.reason,
                      helper_cost=advice.cost_usd, advice=said)
    return said


def _tail(log: Path, limit: int = 4000) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-limit:]
