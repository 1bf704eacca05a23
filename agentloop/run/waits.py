"""Waiting out what is not the task's fault: usage limits and transient failures."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from agentloop.agents import LIMIT, OTHER, TRANSIENT, AgentResult, Failure
from agentloop.errors import Interrupted, RunStopped
from agentloop.proc import running
from agentloop.run.context import Run
from agentloop.run.events import LaneHeld, LimitWait, LimitWaitOver
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import State, iso, unix

# A limit wait without a reset time backs off from `backoff` seconds, doubling, up to this.
MAX_BACKOFF = 3600.0
# Seconds added to a reported reset time, so we do not knock a moment too early.
RESET_MARGIN = 5.0


def classify(run: Run, result: AgentResult) -> Failure:
    """The agent's own reading of a failed run, at the run's clock."""
    return run.agent.classify(result, datetime.fromtimestamp(run.clock.time(), timezone.utc))


def wait_for_limit(run: Run, failure: Failure) -> None:
    """Sleep until the limit resets (or a doubling backoff); stop once out of waits."""
    if run.lane:
        _wait_together(run, failure)
        return
    run.tally.limit_waits += 1
    waits, most = run.tally.limit_waits, run.options.max_limit_waits
    if waits > most:
        raise RunStopped(_out_of_waits(most, failure))
    if failure.resets_at is not None:
        seconds = max(0.0, failure.resets_at - run.clock.time()) + RESET_MARGIN
    else:
        seconds = min(MAX_BACKOFF, run.options.backoff * 2 ** (waits - 1))
    run.emit(LimitWait(failure.reason, seconds, run.clock.time() + seconds, waits, most))
    run.clock.sleep(seconds)
    run.emit(LimitWaitOver(waits))


def recorded_limit(state: State, now: float) -> Failure | None:
    """The usage limit a stopped run met and recorded (a task's last run `limited`, its reset
    still ahead), the latest of them; None when there is none. The limit is the account's, not
    the task's: until it resets no agent of this run can work, whichever task it takes."""
    latest: Failure | None = None
    for task in state.tasks:
        last = task.history[-1] if task.history else None
        if last is None or last.outcome != O.LIMITED or not last.resets_at:
            continue
        resets = unix(last.resets_at)
        if resets is not None and resets > now and (latest is None or
                                                    resets > (latest.resets_at or 0.0)):
            latest = Failure(LIMIT, last.reason or "usage limit", resets)
    return latest


def _out_of_waits(most: int, failure: Failure) -> str:
    """The stop line once the run may wait no more: when the limit resets, if it is known, so
    the user knows when a re-run can go on (it waits for that time itself)."""
    line = f"usage limit: waited {most} times already ({failure.reason})"
    if failure.resets_at is None or iso(failure.resets_at) is None:
        return line  # no reset, or one no date holds (garbled): not kept for a re-run either
    at = time.strftime("%Y-%m-%d %H:%M", time.localtime(failure.resets_at))
    return f"{line}; it resets at {at}, and a re-run waits until then"


def excused_by_a_pause(run: Run, result: AgentResult, failure: Failure) -> bool:
    """Whether a failed run is not the task's fault because the whole run was stopped while it
    worked (a machine asleep, Ctrl+Z): what broke then, a connection or a timeout, is handled
    like a limit, no attempt, and counts among the run's limit waits so it cannot go on for
    ever."""
    if not result.paused or failure.kind not in (TRANSIENT, OTHER):
        return False
    run.tally.limit_waits += 1
    return run.tally.limit_waits <= run.options.max_limit_waits


def _wait_together(run: Run, failure: Failure) -> None:
    """A parallel run's lane met a limit: every lane waits for the same reset, and only the
    first to meet it says so (one wait, one line), however many lanes meet it meanwhile."""
    shared, wait = run.shared, 0
    with shared.lock:
        now = run.clock.time()
        until = shared.paused_until
        if until <= now:
            shared.limit_waits += 1
            wait, most = shared.limit_waits, run.options.max_limit_waits
            if wait > most:
                raise RunStopped(_out_of_waits(most, failure))
            if failure.resets_at is not None:
                seconds = max(0.0, failure.resets_at - now) + RESET_MARGIN
            else:
                seconds = min(MAX_BACKOFF, run.options.backoff * 2 ** (wait - 1))
            until = shared.paused_until = now + seconds
            run.emit(LimitWait(failure.reason, seconds, until, wait, most))
    hold(run)
    if wait:
        run.emit(LimitWaitOver(wait))


def hold(run: Run) -> None:
    """Before any agent run of a parallel run's lane: wait out a limit another lane met, said
    once as the lane's state (held, until when)."""
    if run.shared.paused_until > run.clock.time():
        run.emit(LaneHeld(run.shared.paused_until))
    while (left := run.shared.paused_until - run.clock.time()) > 0:
        if running.stopping():  # Ctrl+C: the main thread stops every lane
            raise Interrupted("interrupted")
        run.clock.sleep(min(left, 1.0))
