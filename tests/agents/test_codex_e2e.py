"""agent-loop end to end with `--agent codex`: the REAL Codex CLI against the fake Responses API
(tests/support/fake_openai.py), on real git and real jj.

Issue 16's "done when": a three-task, two-group plan (the second task of a group resumes its
thread, the other group starts fresh, each task's edits in their own change), a 500 retried as
transient, a 401 stopping the run with a clear line, a usage limit that waits, a failed task
going through the retry advisor (a helper call on Codex's small model), `--review` giving
feedback and then approving, and Ctrl+C giving exit 130 and a clean resume.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from agentloop.agents.codex import MODELS
from tests.support.codex_cli import codex_project
from tests.support.fake_openai import (
    Directed,
    FakeOpenAI,
    Hang,
    HttpError,
    Message,
    Request,
    last_user_text,
    server_error,
    unauthorized,
    usage_limit,
)
from tests.support.repos import git_commits, jj_changes, tasks_of
from tests.support.runner import agent_loop

# The fixtures, imported rather than registered as a plugin.

REVIEWER = "gpt-6.1-terra"   # a model of its own, so the fake can tell the reviewer apart


def first_request(api: FakeOpenAI, prompt_line: str) -> Request:
    return next(r for r in api.responses_requests()
                if last_user_text(r.body).startswith(prompt_line))


@pytest.mark.parametrize("vcs", ["git", "jj"])
def test_two_groups_resume_inside_a_group_and_each_task_has_its_change(
        tmp_path: Path, fake_openai: FakeOpenAI, vcs: str) -> None:
    work, env = codex_project(tmp_path, fake_openai, vcs=vcs)
    done = agent_loop(work, "--agent", "codex", "--vcs", vcs, "--no-distill", env=env)
    assert done.returncode == 0, done.stderr
    tasks = tasks_of(work)
    assert [t["status"] for t in tasks] == ["completed"] * 3
    assert tasks[0]["session_id"] == tasks[1]["session_id"] != tasks[2]["session_id"]
    second = json.dumps(first_request(fake_openai, "WRITE api-test.txt").body["input"])
    third = json.dumps(first_request(fake_openai, "WRITE readme.txt").body["input"])
    assert "WRITE api.txt: the api" in second and "api.txt" not in third
    changes = git_commits(work) if vcs == "git" else jj_changes(work)
    assert [files for _, _, files in changes] == [["api.txt"], ["api-test.txt"], ["readme.txt"]]
    assert (work / "api.txt").read_text() == "the api\n"
    # The task's own tokens (one patch call and one message: 2 requests), priced by agent-loop.
    first = tasks[0]["history"][0]
    assert first["usage"]["input_tokens"] == 200 and first["cost_known"] is True  # priced
    assert tasks[1]["history"][0]["usage"]["input_tokens"] == 200  # not the thread's 400
    log = (work / tasks[0]["log"]).read_text()
    assert "→ patch add " in log and "cost: not reported" in log
    assert {r.model for r in fake_openai.responses_requests()} == {MODELS.task}
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    assert state["agent"] == "codex"


def test_a_500_is_retried_as_transient(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai)
    fake_openai.script(server_error())
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", "--backoff", "0.2",
                      env=env)
    assert done.returncode == 0, done.stderr
    first = tasks_of(work)[0]
    assert first["status"] == "completed" and first["attempts"] == 2
    assert "high demand" in first["history"][0]["reason"]
    assert "transient failure: trying again" in done.stdout


def test_a_401_stops_the_run_with_a_clear_line(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai)
    fake_openai.script(unauthorized())
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", env=env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("agent-loop: stopped: codex cannot work until this is fixed")
    assert "Incorrect API key" in last
    assert [t["status"] for t in tasks_of(work)] == ["pending"] * 3
    assert len(fake_openai.responses_requests()) == 1


def test_a_usage_limit_waits(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai, "## G\n- WRITE one.txt: one\n")
    # Codex prints the reset to the minute: a reset 20 s away waits at most ~25 s.
    fake_openai.script(usage_limit(int(time.time()) + 20))
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", env=env)
    assert done.returncode == 0, done.stderr
    first = tasks_of(work)[0]
    assert [a["outcome"] for a in first["history"]] == ["limited", "completed"]
    assert first["attempts"] == 1 and "usage limit" in first["history"][0]["reason"]
    assert "waiting until" in done.stdout


def test_a_failed_task_goes_through_the_retry_advisor(tmp_path: Path,
                                                       fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai, "## G\n- WRITE one.txt: one\n")
    fake_openai.script(HttpError(400, {"type": "invalid_request_error",
                                       "message": "odd request (fake)"}), model=MODELS.task)
    fake_openai.script(Message('{"retry": true, "reason": "a fluke", '
                               '"hint": "write the file first"}'), model=MODELS.helper)
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", env=env)
    assert done.returncode == 0, done.stderr
    (advisor,) = [r for r in fake_openai.responses_requests() if r.model == MODELS.helper]
    assert "odd request" in last_user_text(advisor.body)
    assert '"sandbox_mode":"read-only"' in advisor.headers["x-codex-turn-metadata"]
    first = tasks_of(work)[0]
    assert first["status"] == "completed" and first["attempts"] == 2
    assert first["history"][0]["hint"] == "write the file first"
    assert "advisor: retry: a fluke" in done.stdout
    assert any("write the file first" in last_user_text(r.body)
               for r in fake_openai.responses_requests() if r.model == MODELS.task)


def test_review_gives_feedback_then_approves(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai,
                              "## Greeter\n- WRITE hello.py: print('hello')\n", vcs="git")
    fake_openai.script(Message("Nothing tests it.\nFEEDBACK: add a test.\n"
                               "WRITE test_hello.py: import hello"),
                       Message("APPROVED"), model=REVIEWER)
    done = agent_loop(work, "--agent", "codex", "--vcs", "git", "--no-distill", "--review",
                      "--review-model", REVIEWER, env=env)
    assert done.returncode == 0, done.stderr
    reviews = [r for r in fake_openai.responses_requests() if r.model == REVIEWER]
    assert len(reviews) == 2
    assert "diff --git a/hello.py b/hello.py" in last_user_text(reviews[0].body)
    assert '"sandbox_mode":"read-only"' in reviews[0].headers["x-codex-turn-metadata"]
    (commit,) = git_commits(work)
    assert sorted(commit[2]) == ["hello.py", "test_hello.py"]
    history = tasks_of(work)[0]["history"]
    assert [(a["role"], a["outcome"]) for a in history] == [
        ("developer", "feedback"), ("reviewer", "feedback"), ("developer", "completed"),
        ("reviewer", "approved")]
    # The fix resumes the developer's thread; each review is a fresh one.
    sessions = [a["session_id"] for a in history]
    assert sessions[0] == sessions[2] and len({sessions[0], sessions[1], sessions[3]}) == 3
    assert history[2]["usage"]["input_tokens"] == 200  # the fix's own part of the thread
    fix = [r for r in fake_openai.responses_requests()
           if r.model == MODELS.task and "add a test." in last_user_text(r.body)]
    assert fix, "the feedback never reached the developer"


def test_ctrl_c_exits_130_and_resumes_cleanly(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai)
    # Task 1: a patch call and a message; then task 2's first request hangs.
    fake_openai.script(Directed(), Directed(), Hang())
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--agent", "codex",
                             "--vcs", "none", "--no-distill"], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(fake_openai.responses_requests()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(fake_openai.responses_requests()) == 3, "task 2 never reached the API"
    tool.send_signal(signal.SIGINT)
    _, err = tool.communicate(timeout=60)
    assert tool.returncode == 130, err
    assert "Resume with: agent-loop tasks.md --agent codex" in err
    assert [t["status"] for t in tasks_of(work)] == ["completed", "interrupted", "pending"]
    again = agent_loop(work, "--agent", "codex", "--vcs", "none", env=env)
    assert again.returncode == 0, again.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed"] * 3


def test_commit_messages_come_from_codex_small_model(tmp_path: Path,
                                                     fake_openai: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, fake_openai, "## G\n- WRITE one.txt: one\n", vcs="git")
    fake_openai.script(Message('{"subject": "Add one.txt", "body": "The first file."}'),
                       model=MODELS.helper)
    done = agent_loop(work, "--agent", "codex", "--vcs", "git", env=env)
    assert done.returncode == 0, done.stderr
    ((_, subject, files),) = git_commits(work)
    assert subject == "agent-loop: G / Add one.txt" and files == ["one.txt"]
    (helper,) = [r for r in fake_openai.responses_requests() if r.model == MODELS.helper]
    assert "one.txt" in last_user_text(helper.body)


def test_two_threads_begun_in_the_same_minute_are_shown_apart(tmp_path: Path,
                                                              fake_openai: FakeOpenAI) -> None:
    """Codex's thread ids are time-ordered (UUIDv7): their first 8 characters are the time of
    day, so two groups' threads begun within a minute read as one session ("ran in session
    01a22576" for both) where they are two."""
    work, env = codex_project(tmp_path, fake_openai, vcs="git")
    done = agent_loop(work, "--agent", "codex", "--vcs", "git", "--no-distill", "--task", "1,3",
                      env=env)
    assert done.returncode == 0, done.stderr
    first, _, third = (t["session_id"] for t in tasks_of(work))
    shown = [line.split("ran in session ")[1].split()[0] for line in done.stdout.splitlines()
             if "ran in session " in line]
    assert len(shown) == 2 and shown[0] != shown[1], done.stdout
    assert shown[0] in first and shown[1] in third  # a part of the whole id, for a search
    dry = agent_loop(work, "--agent", "codex", "--vcs", "git", "--dry-run", env=env)
    assert f"(resumes session {shown[0]})" in dry.stdout, dry.stdout
