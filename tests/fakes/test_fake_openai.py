"""The fake Responses API (tests/support/fake_openai.py) checked with the real Codex CLI, and what
the CLI sends and prints: the facts tests/codex-cli/NOTES.md records. Rerun after a version bump."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.codex_cli import CliRun, codex_env, require_codex, run_codex, session_files
from tests.support.fake_openai import (
    PATCH_TOOL,
    SHELL_TOOL,
    FakeOpenAI,
    Message,
    Patch,
    Shell,
    add_file,
    developer_text,
    last_user_text,
    rate_limited,
    server_error,
    tool_outputs,
    unauthorized,
    usage_limit,
)

# The fixtures, imported rather than registered as a plugin.

RULES = 'developer_instructions="RULES FOR THE TEST"'


def exec_argv(*extra: str, model: str = "gpt-6.1-sol") -> list[str]:
    return [str(require_codex()), "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "-m", model, "-c", RULES, *extra]


@pytest.fixture
def where(tmp_path: Path, fake_openai: FakeOpenAI) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    work.mkdir()
    return work, codex_env(tmp_path / "home", fake_openai)


def codex(where: Any, prompt: str, *extra: str, argv: list[str] | None = None) -> CliRun:
    work, env = where
    return run_codex(argv or exec_argv(*extra, "-"), work, env, stdin=prompt)


def test_a_message_and_what_codex_sends(where: Any, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Message("hello there"))
    done = codex(where, "say hello")
    assert done.returncode == 0, done.stderr
    assert [e["type"] for e in done.events] == ["thread.started", "turn.started",
                                                "item.completed", "turn.completed"]
    assert done.items("agent_message") == [{"id": "item_0", "type": "agent_message",
                                            "text": "hello there"}]
    assert done.of_type("turn.completed")[0]["usage"] == {
        "input_tokens": 100, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
        "output_tokens": 20, "reasoning_output_tokens": 0}
    (req,) = fake_openai.requests
    assert req.is_responses and req.body["stream"] is True and req.model == "gpt-6.1-sol"
    assert req.headers["authorization"] == "Bearer sk-fake-key"
    assert req.headers["user-agent"].startswith("codex_exec/0.169.0")
    assert developer_text(req.body).startswith("You are Codex")
    assert "RULES FOR THE TEST" in developer_text(req.body)
    assert last_user_text(req.body) == "say hello"  # stdin byte for byte
    # gpt-6.x models get "code mode": no top-level tools, a first input item of type
    # additional_tools whose `functions` namespace holds a freeform JavaScript `exec` tool (the
    # model calls `await tools.exec_command(...)` inside it). Codex still runs a direct
    # exec_command / apply_patch call, which is what the fake sends.
    assert not req.body.get("tools")
    extra = req.body["input"][0]
    assert extra["type"] == "additional_tools" and extra["role"] == "developer"
    functions = {t["name"]: t for t in extra["tools"][0]["tools"]}
    assert functions["exec"]["type"] == "custom"


def test_older_models_declare_exec_command_and_apply_patch(where: Any,
                                                         fake_openai: FakeOpenAI) -> None:
    done = codex(where, "SAY hi", argv=exec_argv("-", model="gpt-5.5"))
    assert done.returncode == 0
    (req,) = fake_openai.requests
    shell, patch = req.tools[SHELL_TOOL], req.tools[PATCH_TOOL]
    assert shell["type"] == "function" and shell["parameters"]["required"] == ["cmd"]
    assert patch["type"] == "custom" and patch["format"]["syntax"] == "lark"
    assert "*** Add File: " in patch["format"]["definition"]


def test_a_shell_call_runs_in_the_working_copy(where: Any, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Shell("echo hi > made.txt && echo ok"), Message("made"))
    done = codex(where, "make it")
    assert done.returncode == 0 and (where[0] / "made.txt").read_text() == "hi\n"
    (command,) = done.items("command_execution")
    assert command["command"] == "/bin/bash -lc 'echo hi > made.txt && echo ok'"
    assert command["exit_code"] == 0 and command["aggregated_output"] == "ok\n"
    assert done.of_type("item.started")[0]["item"]["status"] == "in_progress"
    second = fake_openai.requests[1].body
    assert second["input"][-1]["type"] == "function_call_output"
    assert "Process exited with code 0" in tool_outputs(second)[0]
    assert done.of_type("turn.completed")[0]["usage"]["input_tokens"] == 200


def test_a_patch_call_edits_the_working_copy(where: Any, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Patch(add_file("a/b.txt", "one\ntwo")), Message("patched"))
    done = codex(where, "patch it")
    assert done.returncode == 0 and (where[0] / "a" / "b.txt").read_text() == "one\ntwo\n"
    (change,) = done.items("file_change")
    assert change["changes"] == [{"path": str(where[0] / "a" / "b.txt"), "kind": "add"}]
    assert change["status"] == "completed"
    output = fake_openai.requests[1].body["input"][-1]
    assert output["type"] == "custom_tool_call_output"
    assert "Success. Updated the following files:\nA a/b.txt" in output["output"]


def test_directives(where: Any, fake_openai: FakeOpenAI) -> None:
    done = codex(where, "a task\nWRITE notes.txt: written\nRUN echo ran > ran.txt\nSAY all done")
    assert done.returncode == 0, done.stderr
    assert (where[0] / "notes.txt").read_text() == "written\n"
    assert (where[0] / "ran.txt").read_text() == "ran\n"
    assert done.items("agent_message")[-1]["text"] == "all done"
    assert len(fake_openai.requests) == 3


def test_resume_continues_and_usage_adds_up(where: Any, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Message("one"), Message("two"))
    first = codex(where, "first")
    argv = [str(require_codex()), "exec", "resume", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "-m", "gpt-6.1-sol", "-c", RULES,
            "--", first.thread_id, "-"]
    second = codex(where, "second", argv=argv)
    assert second.returncode == 0 and second.thread_id == first.thread_id
    assert second.of_type("turn.completed")[0]["usage"]["input_tokens"] == 200
    body = fake_openai.requests[1].body
    assert "RULES FOR THE TEST" in developer_text(body)
    assert last_user_text(body).rstrip() == "second"
    assert [i.get("role") for i in body["input"] if i["type"] == "message"][-2:] == [
        "assistant", "user"]
    refused = codex(where, "x", argv=[*argv[:3], "-s", "read-only", first.thread_id, "-"])
    assert refused.returncode == 2 and "unexpected argument '-s'" in refused.stderr


def test_ephemeral_keeps_no_session(where: Any, fake_openai: FakeOpenAI) -> None:
    done = codex(where, "SAY hi", "--ephemeral")
    assert done.returncode == 0 and session_files(where[1]) == []
    codex(where, "SAY hi")
    assert len(session_files(where[1])) == 1


@pytest.mark.parametrize("reply, message", [
    (server_error(), "We’re currently experiencing high demand, which may cause temporary "
                     "errors."),
    (unauthorized(), "unexpected status 401 Unauthorized: Incorrect API key provided"),
    (rate_limited(), "exceeded retry limit, last status: 429 Too Many Requests"),
    (usage_limit(None), "You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage "
                        "to purchase more credits or try again later."),
])
def test_errors(where: Any, fake_openai: FakeOpenAI, reply: Any, message: str) -> None:
    fake_openai.script(reply)
    done = codex(where, "x")
    assert done.returncode == 1
    assert [e["type"] for e in done.events] == ["thread.started", "turn.started", "error",
                                                "turn.failed"]
    assert done.of_type("turn.failed")[0]["error"]["message"].startswith(message)
    assert len(fake_openai.requests) == 1


def test_a_usage_limit_names_its_reset_in_local_time(where: Any,
                                                    fake_openai: FakeOpenAI) -> None:
    resets = int(time.time()) + 3600
    fake_openai.script(usage_limit(resets))
    done = codex(where, "x")
    shown = time.strftime("%I:%M %p", time.localtime(resets)).lstrip("0")
    message = done.of_type("turn.failed")[0]["error"]["message"]
    if time.localtime(resets).tm_mday == time.localtime().tm_mday:
        assert message.endswith(f"try again at {shown}."), message
    else:  # an hour from now is tomorrow (a run after 23:00): Codex names the day too
        day = time.localtime(resets)
        assert f"try again at {time.strftime('%b', day)} {day.tm_mday}" in message, message
        assert message.endswith(f", {day.tm_year} {shown}."), message


def test_codex_retries_by_itself(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = codex_env(tmp_path / "home", fake_openai, retries=2)
    fake_openai.script(server_error(), server_error(), Message("third time"))
    done = run_codex(exec_argv("-"), work, env, stdin="x")
    assert done.returncode == 0 and len(fake_openai.requests) == 3
    # request_max_retries retries quietly (no `error` event), ~0.3 s apart.
    assert done.of_type("error") == []
    assert json.dumps(done.items("agent_message")).count("third time") == 1
