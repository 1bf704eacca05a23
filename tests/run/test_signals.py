"""Signals, iterations, learnings, single-task mode, pacing and stall reports (issue 8).

Runner-level tests use a scripted agent and a fake clock (see tests/run/test_retries.py); the CLI
tests use the fake claude.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from agentloop.agents import AgentResult
from agentloop.cli import command
from agentloop.errors import RunStopped
from agentloop.run.final_message import parse
from tests.support.fake_agent import FakeClaude
from tests.support.harness import OK, RETRY, STOP, ScriptedAdvisor, ScriptedAgent, make


def said(text: str, session: str = "s1") -> AgentResult:
    return AgentResult(ok=True, exit_code=0, session_id=session, text=text, cost_usd=0.01)


# -- the report parser -------------------------------------------------------------------------

@pytest.mark.parametrize("text, signal, reason", [
    ("done\nTASK_COMPLETE", "TASK_COMPLETE", ""),
    ("done\n**TASK_COMPLETE**\n", "TASK_COMPLETE", ""),
    ("TASK_BLOCKED: needs the staging password", "TASK_BLOCKED", "needs the staging password"),
    ("`AGENT_LOOP_ERROR: disk is full`", "AGENT_LOOP_ERROR", "disk is full"),
    ("I will print TASK_COMPLETE when done", None, ""),
    ("```\nTASK_COMPLETE\n```\nnot yet", None, ""),
    ("> TASK_BLOCKED: quoted from the docs", None, ""),
    ("TASK_BLOCKED: first\nthen fixed it\nTASK_COMPLETE", "TASK_COMPLETE", ""),
    ("TASK_COMPLETED", None, ""),
])
def test_a_signal_is_a_line_of_its_own(text: str, signal: str | None, reason: str) -> None:
    report = parse(text)
    assert (report.signal, report.reason) == (signal, reason)


def test_progress_and_learnings_sections() -> None:
    report = parse("Changed two files.\n\nProgress: the API is done;\ntests are left.\n\n"
                   "**Learnings:**\n- run `make check` before pushing\n- the DB is sqlite\n\n"
                   "TASK_COMPLETE")
    assert report.progress == "the API is done;\ntests are left."
    assert report.learnings == "- run `make check` before pushing\n- the DB is sqlite"
    assert report.signal == "TASK_COMPLETE"


# -- signals in the runner ---------------------------------------------------------------------

def test_blocked_task_keeps_the_chain_and_the_run_goes_on(tmp_path: Path) -> None:
    agent = ScriptedAgent([OK, said("TASK_BLOCKED: needs the API key", "s-ok"), OK])
    runner, _, _ = make(tmp_path, "## G\n- one\n- two\n- three\n", agent, ScriptedAdvisor(STOP))
    runner.run()
    one, two, three = runner.state.tasks
    assert (one.status, two.status, three.status) == ("completed", "blocked", "completed")
    assert two.error == "needs the API key" and two.change_id is None
    assert agent.requests[2].resume == "s-ok"  # the chain goes on through the blocked task
    again = ScriptedAgent([OK])
    runner2, _, _ = make(tmp_path, "## G\n- one\n- two\n- three\n", again, ScriptedAdvisor(STOP))
    runner2.state = runner.state
    runner2.run()
    assert again.requests == []  # a blocked task waits for --task N


def test_fatal_signal_stops_the_run_with_state_saved(tmp_path: Path) -> None:
    agent = ScriptedAgent([said("AGENT_LOOP_ERROR: the repository is corrupt"), OK])
    runner, _, _ = make(tmp_path, "- one\n- two\n", agent, ScriptedAdvisor(RETRY))
    with pytest.raises(RunStopped, match="fatal error on task 1: the repository is corrupt"):
        runner.run()
    saved = runner.project.store.load()
    assert saved is not None and [t.status for t in saved.tasks] == ["pending", "pending"]
    assert len(agent.requests) == 1


# -- iterations --------------------------------------------------------------------------------

def test_iterations_continue_in_one_session_until_complete(tmp_path: Path) -> None:
    agent = ScriptedAgent([said("step one\nProgress: half way", "s9"), said("step two", "s9"),
                           said("all done\nTASK_COMPLETE", "s9")])
    runner, _, _ = make(tmp_path, "- big job\n", agent, ScriptedAdvisor(RETRY), iterations=5)
    runner.run()
    task = runner.state.tasks[0]
    assert task.status == "completed" and task.attempts == 1
    assert [(a.iteration, a.outcome) for a in task.history] == [
        (1, "continued"), (2, "continued"), (3, "completed")]
    first, second, third = agent.requests
    assert first.resume is None and second.resume == "s9" and third.resume == "s9"
    assert "end your final message with the line TASK_COMPLETE" in first.prompt
    assert "Your progress so far:\nhalf way" in second.prompt
    assert [r.log.name for r in agent.requests] == [
        "001-ungrouped--big-job.log", "001-ungrouped--big-job-iter2.log",
        "001-ungrouped--big-job-iter3.log"]


def test_iterations_spent_without_completion_are_judged_as_a_failure(tmp_path: Path) -> None:
    agent = ScriptedAgent([said("still working")])
    advisor = ScriptedAdvisor(STOP)
    runner, _, _ = make(tmp_path, "- big job\n", agent, advisor, iterations=2)
    runner.run()
    task = runner.state.tasks[0]
    assert len(agent.requests) == 2 and task.status == "failed"
    assert advisor.calls[0]["error"] == "not complete after 2 iterations (no TASK_COMPLETE)"


def test_one_iteration_needs_no_signal(tmp_path: Path) -> None:
    runner, _, _ = make(tmp_path, "- small\n", ScriptedAgent([said("done")]), ScriptedAdvisor(STOP))
    runner.run()
    assert runner.state.tasks[0].status == "completed"


# -- learnings ---------------------------------------------------------------------------------

def test_learnings_cross_groups_and_user_edits_are_respected(tmp_path: Path) -> None:
    agent = ScriptedAgent([said("ok\nLearnings:\n- build with `make`", "a"), said("ok", "a"),
                           said("ok\nLearnings: none", "b")])
    runner, _, _ = make(tmp_path, "## A\n- one\n- two\n## B\n- three\n", agent,
                        ScriptedAdvisor(STOP))
    runner.run()
    first, second, third = agent.requests
    assert "Learnings from earlier tasks" not in first.prompt
    assert "Learnings from earlier tasks" not in second.prompt  # resumed: it was there
    assert third.prompt.startswith("Learnings from earlier tasks")
    assert "- build with `make`" in third.prompt and third.prompt.endswith("three")
    learnings = tmp_path / ".agent-loop" / "learnings.md"
    assert learnings.read_text().count("## Task") == 1  # "none" is not a learning
    history = [orjson.loads(line) for line in
               (tmp_path / ".agent-loop" / "learnings.jsonl").read_text().splitlines()]
    assert [(h["task"], h["iteration"]) for h in history] == [(1, 1)]
    # The user rewrites the learnings between runs; the next fresh session gets their text.
    learnings.write_text("Use tabs, never spaces.\n")
    runner.project.store.archive("2026-01-01T00:00:00")  # --reset keeps the learnings
    again = ScriptedAgent([OK])
    runner2, _, _ = make(tmp_path, "## C\n- four\n", again, ScriptedAdvisor(STOP))
    runner2.run()
    assert again.requests[0].prompt.startswith(
        "Learnings from earlier tasks of this task list (from .agent-loop/learnings.md):\n"
        "Use tabs, never spaces.")


# -- single task, pacing, stalls ---------------------------------------------------------------

def test_single_task_resumes_its_groups_session(tmp_path: Path) -> None:
    agent = ScriptedAgent([said("ok", "s-one")])
    runner, _, _ = make(tmp_path, "## G\n- one\n- two\n- three\n", agent, ScriptedAdvisor(STOP))
    runner.run(only=(1,))
    runner.run(only=(3,))
    assert [t.status for t in runner.state.tasks] == ["completed", "pending", "completed"]
    assert agent.requests[1].resume == "s-one"


def test_sleep_between_tasks_not_before_the_first(tmp_path: Path) -> None:
    runner, clock, _ = make(tmp_path, "- a\n- b\n- c\n", ScriptedAgent([OK]),
                            ScriptedAdvisor(STOP), sleep=7)
    runner.run()
    assert clock.sleeps == [7, 7]


def test_a_task_that_stalls_three_runs_is_reported(tmp_path: Path) -> None:
    summaries = []
    for _ in range(3):
        agent = ScriptedAgent([AgentResult(ok=False, exit_code=1, session_id="x", error="nope")])
        runner, _, events = make(tmp_path, "- stubborn\n", agent, ScriptedAdvisor(STOP),
                                 max_attempts=5)
        saved = runner.project.store.load()
        if saved is not None:
            runner.state = saved
            saved.tasks[0].status = "pending"  # as if the user asked for it again
        summary = runner.run()
        summaries.append(summary)
    assert summaries[0].notes == () and summaries[1].notes == ()
    assert "task 1 has started in 3 runs in a row without completing" in summaries[2].notes[0]
    assert "001-ungrouped--stubborn" in summaries[2].notes[0]


# -- through the CLI with the fake claude -------------------------------------------------------

def invoke(work: Path, *args: str) -> Any:
    return CliRunner().invoke(command, ["tasks.md", "--vcs", "none", *args],
                              catch_exceptions=False)


def test_cli_single_task_and_its_errors(tmp_path: Path, fake_claude: FakeClaude,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n- two\n")
    result = invoke(tmp_path, "--task", "2")
    assert result.exit_code == 0, result.output
    state = orjson.loads((tmp_path / ".agent-loop" / "state.json").read_bytes())
    assert [t["status"] for t in state["tasks"]] == ["pending", "completed"]
    result = invoke(tmp_path, "--task", "2")
    assert result.exit_code == 1 and "task 2 is completed already" in result.stderr
    result = invoke(tmp_path, "--task", "9")
    assert result.exit_code == 1 and "there is no task 9" in result.stderr


def test_cli_blocked_signal_from_the_fake(tmp_path: Path, fake_claude: FakeClaude,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n  FAKE: say TASK_BLOCKED: no access\n- two\n")
    result = invoke(tmp_path)
    assert result.exit_code == 4  # a blocked task is not a completed one
    assert "task 1 blocked: no access" in result.output
    dry = CliRunner().invoke(command, ["tasks.md", "--dry-run"])
    assert "blocked (no access); run it with --task 1" in dry.output



def test_learnings_an_agent_deletes_mid_run_come_back(tmp_path: Path) -> None:
    from agentloop.state.learnings import Learnings

    learnings = Learnings(tmp_path / ".agent-loop")
    assert learnings.current() == ""  # nothing yet, nothing made up
    learnings.record(1, 1, "t1", "", "use tabs")
    (tmp_path / ".agent-loop" / "learnings.md").unlink()  # the agent's `git clean -fdx`
    assert "use tabs" in learnings.for_prompt()
    assert "use tabs" in (tmp_path / ".agent-loop" / "learnings.md").read_text()
    # Between runs the file is the user's: a new run takes its deletion as meant.
    (tmp_path / ".agent-loop" / "learnings.md").unlink()
    assert Learnings(tmp_path / ".agent-loop").current() == ""
