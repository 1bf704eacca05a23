"""The runner's failure handling, with a scripted agent, a scripted advisor and a fake clock.

No process starts here and no second passes: hours of backoff take microseconds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from freezegun import freeze_time

from agentloop.errors import AgentBlocked, RunStopped
from agentloop.run.events import LimitWait, RetryDecided
from agentloop.vcs.none import NoneVcs
from tests.support.harness import (
    OK,
    RETRY,
    START,
    STOP,
    Harness,
    ScriptedAdvisor,
    ScriptedAgent,
    failed,
    make,
)


def test_ten_failures_get_exactly_five_attempts(tmp_path: Path) -> None:
    agent, advisor = ScriptedAgent([failed()]), ScriptedAdvisor(RETRY)
    runner, _, _ = make(tmp_path, "- flaky\n", agent, advisor)
    runner.run()
    task = runner.state.tasks[0]
    assert len(agent.requests) == 5 and task.attempts == 5
    assert task.status == "failed" and "gave up after 5 attempts" in (task.error or "")
    assert len(advisor.calls) == 4  # the fifth failure is final without asking
    assert [a.number for a in task.history] == [1, 2, 3, 4, 5]
    assert [Path(a.log or "").name for a in task.history][:2] == [
        "001-ungrouped--flaky.log", "001-ungrouped--flaky-attempt2.log"]
    # cost: five runs at $0.01 and four advisor calls at $0.002
    assert task.cost_usd == pytest.approx(0.058)


def test_max_attempts_lowers_the_cap(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed()])
    runner, _, _ = make(tmp_path, "- flaky\n", agent, ScriptedAdvisor(RETRY), max_attempts=2)
    runner.run()
    assert len(agent.requests) == 2


def test_advice_not_to_retry_stops_after_one(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed(), OK])
    advisor = ScriptedAdvisor(STOP)
    runner, _, events = make(tmp_path, "- hard\n- easy\n", agent, advisor)
    runner.run()
    hard, easy = runner.state.tasks
    assert hard.status == "failed" and hard.error == "the task is impossible"
    assert hard.attempts == 1 and easy.status == "completed"
    assert advisor.calls[0]["error"] == "it broke" and advisor.calls[0]["attempt"] == 1
    assert "log of attempt 1" in advisor.calls[0]["log_tail"]
    assert any(isinstance(e, RetryDecided) and not e.retry for e in events)


def test_hint_reaches_the_next_attempt_in_a_fresh_session(tmp_path: Path) -> None:
    agent = ScriptedAgent([OK, failed(), OK])
    runner, _, _ = make(tmp_path, "## G\n- first\n- second\n", agent, ScriptedAdvisor(RETRY))
    runner.run()
    first, second, retry = agent.requests
    assert second.resume == "s-ok"  # the group's session
    assert retry.resume is None  # a retry starts fresh
    assert retry.prompt.startswith("second\n\nAn earlier attempt at this task failed (it broke)")
    assert retry.prompt.endswith("Advice for this attempt: check the imports first")
    task = runner.state.tasks[1]
    assert task.status == "completed" and task.attempts == 2
    assert task.history[0].outcome == "failed" and task.history[0].hint == "check the imports first"


def test_transient_failures_back_off_without_the_advisor(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed(api_error_status=529, api_error_type="overloaded_error"),
                           failed(timed_out=True, error="timed out"), OK])
    advisor = ScriptedAdvisor(RETRY)
    runner, clock, _ = make(tmp_path, "- t\n", agent, advisor, backoff=10)
    runner.run()
    assert advisor.calls == []
    assert clock.sleeps == [10, 20]
    assert runner.state.tasks[0].attempts == 3 and runner.state.tasks[0].status == "completed"


def test_persistent_transient_failures_pause_the_run(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed(api_error_status=500, api_error_type="api_error")])
    runner, _, _ = make(tmp_path, "- t\n- u\n", agent, ScriptedAdvisor(RETRY), backoff=1)
    with pytest.raises(RunStopped, match="paused: 3 transient failures in a row on task 1"):
        runner.run()
    assert runner.state.tasks[0].status == "pending"
    assert len(agent.requests) == 3


def test_usage_limit_waits_for_the_reset_and_is_no_attempt(tmp_path: Path) -> None:
    limited = failed(api_error_status=429, api_error_type="rate_limit_error",
                     api_error="usage_limit_reached", limit_resets_at=START + 600,
                     error="You've hit your 5-hour limit", text="You've hit your 5-hour limit")
    agent = ScriptedAgent([limited, OK])
    advisor = ScriptedAdvisor(RETRY)
    runner, clock, events = make(tmp_path, "- t\n", agent, advisor)
    runner.run()
    assert clock.sleeps == [605]  # until the reset, plus a small margin
    task = runner.state.tasks[0]
    assert task.status == "completed" and task.attempts == 1
    assert [a.outcome for a in task.history] == ["limited", "completed"]
    assert advisor.calls == []
    wait = next(e for e in events if isinstance(e, LimitWait))
    assert wait.until == START + 605 and wait.wait == 1


def test_too_many_limit_waits_stop_the_run(tmp_path: Path) -> None:
    limited = failed(api_error_status=429, api_error_type="rate_limit_error", error="429")
    agent = ScriptedAgent([limited])
    runner, clock, _ = make(tmp_path, "- t\n", agent, ScriptedAdvisor(RETRY),
                            max_limit_waits=2, backoff=60)
    with pytest.raises(RunStopped, match="usage limit: waited 2 times"):
        runner.run()
    assert clock.sleeps == [60, 120]
    assert runner.state.tasks[0].status == "pending" and runner.state.tasks[0].attempts == 0


def test_blocking_errors_stop_at_once_with_state_intact(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed(api_error_status=401, api_error_type="authentication_error",
                                  error="Invalid API key · Fix external API key")])
    runner, _, _ = make(tmp_path, "- t\n- u\n", agent, ScriptedAdvisor(RETRY))
    with pytest.raises(AgentBlocked, match="Invalid API key"):
        runner.run()
    assert len(agent.requests) == 1
    saved = runner.project.store.load()
    assert saved is not None and [t.status for t in saved.tasks] == ["pending", "pending"]
    assert saved.tasks[0].attempts == 0


def test_three_failed_tasks_in_a_row_stop_the_run_as_stuck(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed()])
    runner, _, _ = make(tmp_path, "- a\n- b\n- c\n- d\n", agent, ScriptedAdvisor(STOP))
    with pytest.raises(RunStopped, match=r"seems stuck: 3 tasks failed in a row \(tasks 1, 2, 3\)"):
        runner.run()
    assert [t.status for t in runner.state.tasks] == ["failed"] * 3 + ["pending"]


def test_an_exhausted_task_is_not_run_again(tmp_path: Path) -> None:
    agent = ScriptedAgent([failed()])
    runner, _, _ = make(tmp_path, "- a\n", agent, ScriptedAdvisor(RETRY), max_attempts=2)
    runner.run()
    again = Harness(dataclasses.replace(runner.ctx, advisor=ScriptedAdvisor(RETRY)))
    again.run()
    assert len(agent.requests) == 2


@freeze_time("2026-05-06 07:08:09")
def test_attempt_times_come_from_the_frozen_clock(tmp_path: Path) -> None:
    runner, _, _ = make(tmp_path, "- a\n", ScriptedAgent([OK]), ScriptedAdvisor(RETRY))
    runner.run()
    assert runner.state.tasks[0].history[0].started_at == "2026-05-06T07:08:09+00:00"


def test_a_commit_a_killed_run_made_is_recorded_not_redone(tmp_path: Path) -> None:
    from agentloop.vcs.protocol import Change

    class Recovering(NoneVcs):
        def recovered(self) -> Change | None:
            return Change(change_id="abc123", commit_id="abc123", files=("a.txt",))

    agent = ScriptedAgent([OK])
    runner, _, _ = make(tmp_path, "- one\n- two\n", agent, ScriptedAdvisor(RETRY))
    runner.state.tasks[0].status = "running"
    runner.state.tasks[0].attempts = 1
    from agentloop.state.schema import Attempt
    runner.state.tasks[0].history.append(Attempt(number=1, started_at="t"))
    runner.vcs = Recovering()
    runner.run()
    one, two = runner.state.tasks
    assert one.status == "completed" and one.change_id == "abc123" and one.files == ["a.txt"]
    assert [r.prompt for r in agent.requests] == ["two"]
