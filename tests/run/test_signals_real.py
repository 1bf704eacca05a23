"""Signals, iterations and learnings with the REAL Claude Code CLI against the fake API."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.support.claude_cli import real_project
from tests.support.fakeapi import FakeApi, Text, all_text, last_user_text
from tests.support.repos import tasks_of
from tests.support.runner import agent_loop


def test_learnings_of_group_one_reach_the_first_request_of_group_two(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    (work / "tasks.md").write_text(
        "## One\n- SAY Done.\n  SAY Learnings:\n  SAY - the tests run with `make check`\n"
        "## Two\n- SAY ok\n")
    done = agent_loop(work, "--vcs", "none", env=env)
    assert done.returncode == 0, done.stderr
    requests = fake_api.requests_for_messages()
    group_two = [r for r in requests if last_user_text(r.body).endswith("SAY ok")][0]
    assert "the tests run with `make check`" in last_user_text(group_two.body)
    assert "Learnings from earlier tasks" in last_user_text(group_two.body)
    assert "Learnings from earlier tasks" not in all_text(requests[0].body)
    learned = (work / ".agent-loop" / "learnings.md").read_text()
    assert "## Task 1" in learned and "make check" in learned


def test_blocked_signal_with_the_real_cli(tmp_path: Path, fake_api: FakeApi,
                                          claude_bin: Path) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    (work / "tasks.md").write_text("## G\n- SAY TASK_BLOCKED: needs a human\n- SAY fine\n")
    done = agent_loop(work, "--vcs", "none", env=env)
    assert done.returncode == 4, done.stderr  # blocked
    blocked, fine = tasks_of(work)
    assert blocked["status"] == "blocked" and blocked["error"] == "needs a human"
    assert fine["status"] == "completed" and fine["session_id"] == blocked["session_id"]


def test_fatal_signal_with_the_real_cli(tmp_path: Path, fake_api: FakeApi,
                                        claude_bin: Path) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    (work / "tasks.md").write_text("- SAY AGENT_LOOP_ERROR: the disk is failing\n- SAY fine\n")
    done = agent_loop(work, "--vcs", "none", env=env)
    assert done.returncode == 1
    assert "fatal error on task 1: the disk is failing" in done.stderr
    assert "Continue with: agent-loop tasks.md --vcs none" in done.stderr
    assert [t["status"] for t in tasks_of(work)] == ["pending", "pending"]


def test_iterations_with_the_real_cli(tmp_path: Path, fake_api: FakeApi,
                                      claude_bin: Path) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    (work / "tasks.md").write_text("- a long job\n")
    fake_api.script(Text("first part done\nProgress: parsed the input"),
                    Text("all done\nTASK_COMPLETE"))
    done = agent_loop(work, "--vcs", "none", "--iterations", "4", env=env)
    assert done.returncode == 0, done.stderr
    task = tasks_of(work)[0]
    assert task["status"] == "completed"
    assert [(a["iteration"], a["outcome"]) for a in task["history"]] == [
        (1, "continued"), (2, "completed")]
    assert task["history"][0]["session_id"] == task["history"][1]["session_id"]
    second = fake_api.requests_for_messages()[1]
    assert "Your progress so far:\nparsed the input" in last_user_text(second.body)
    assert "a long job" in orjson.dumps(second.body["messages"]).decode()  # same session
