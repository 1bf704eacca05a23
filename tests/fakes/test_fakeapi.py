"""The fake Messages API, first on its own, then driving the real Claude Code CLI.

The CLI tests pin down what agent-loop relies on; tests/claude-cli/NOTES.md records the numbers.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_cli import (
    ClaudeTimedOut,
    claude_argv,
    claude_env,
    oauth_login,
    run_claude,
)
from tests.support.fakeapi import (
    FakeApi,
    Hang,
    Text,
    ToolUse,
    all_text,
    directive_reply,
    last_user_text,
    overloaded,
    rate_limited,
    server_error,
    unauthorized,
    usage_limit,
)

# Every CLI run gets this long; one takes under a second here (NOTES.md).
TIMEOUT = 60.0


# --- the fake on its own ------------------------------------------------------------------------

def _body(*messages: dict[str, Any], cwd: str = "/w") -> dict[str, Any]:
    """A request body shaped like the CLI's: environment details as a trailing system message."""
    env = {"role": "system", "content": f"# Environment\n - Primary working directory: {cwd}\n"}
    write = {"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}}
    return {"model": "claude-opus-5-5", "tools": [write], "messages": [*messages, env]}


def _user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def _post(api: FakeApi, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    # http.client rather than urllib: it never consults proxy variables.
    host, port = api.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def test_last_user_text_skips_reminders_and_the_trailing_system_message() -> None:
    body = _body(_user("<system-reminder>\ngit status\n</system-reminder>", "the task"))
    assert last_user_text(body) == "the task"


def test_directives_write_in_order_then_say() -> None:
    prompt = "WRITE a.txt: one\nWRITE /abs/b.txt: two\nSAY all written\nSAY DONE"
    first = directive_reply(_body(_user(prompt), cwd="/w w"))
    assert first == ToolUse("Write", {"file_path": "/w w/a.txt", "content": "one\n"})
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Write"}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    second = directive_reply(_body(_user(prompt), call, result))
    assert second == ToolUse("Write", {"file_path": "/abs/b.txt", "content": "two\n"})
    assert directive_reply(_body(_user(prompt), call, result, call, result)) == Text(
        "all written\nDONE")


def test_without_directives_the_reply_is_final_text_or_done() -> None:
    body = _body(_user("Fix the bug\nin detail"))
    assert directive_reply(body) == Text("done: Fix the bug")
    assert directive_reply(body, final_text="SIGNAL: ok") == Text("SIGNAL: ok")


def test_scripted_replies_match_on_model_and_errors_carry_headers(fake_api: FakeApi) -> None:
    fake_api.script(Text("for haiku"), model="haiku")
    fake_api.script(rate_limited(retry_after=7))
    status, headers, raw = _post(fake_api, "/v1/messages?beta=true", _body(_user("x")))
    assert (status, headers["retry-after"]) == (429, "7")
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    haiku = dict(_body(_user("x")), model="claude-haiku-5-5")
    status, headers, raw = _post(fake_api, "/v1/messages", haiku)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert '"text": "for haiku"' in raw.decode()
    assert fake_api.pending == []
    assert [r.model for r in fake_api.requests_for_messages()] == [
        "claude-opus-5-5", "claude-haiku-5-5"]


def test_unknown_paths_are_refused_and_recorded(fake_api: FakeApi) -> None:
    status, _, _ = _post(fake_api, "/v1/other", {})
    assert status == 404
    assert [r.path for r in fake_api.unexpected()] == ["/v1/other"]


def test_a_hung_request_is_released_when_the_server_stops() -> None:
    api = FakeApi().start()
    api.script(Hang())
    errors: list[BaseException] = []

    def call() -> None:
        try:
            _post(api, "/v1/messages", _body(_user("x")))
        except (OSError, http.client.HTTPException) as exc:  # the answer never comes
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 5
    while not api.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    start = time.monotonic()
    api.stop()
    caller.join(5)
    assert not caller.is_alive() and errors
    assert time.monotonic() - start < 2


# --- the real CLI against the fake --------------------------------------------------------------

@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The CLI's cwd, apart from its throwaway HOME."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def env(tmp_path: Path, fake_api: FakeApi) -> dict[str, str]:
    """The CLI's environment, pointed at the fake."""
    return claude_env(tmp_path / "home", fake_api)


def test_text_reply(claude_bin: Path, fake_api: FakeApi, work: Path, env: dict[str, str]) -> None:
    run = run_claude(claude_argv(claude_bin, "Say hello", append_system_prompt="APPENDED-MARK"),
                     work, env, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    init = run.of_type("system", "init")[0]
    result = run.result
    assert run.lines[-1] is not None and run.lines[-1]["type"] == "result"  # last, as FACTS says
    assert result["session_id"] == init["session_id"]
    assert result["result"] == "done: Say hello" and result["is_error"] is False
    assert result["num_turns"] == 1 and result["duration_ms"] > 0
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (100, 20)
    # Opus is priced $4 in / $20 out per million tokens: 100 * 4e-6 + 20 * 20e-6.
    assert result["total_cost_usd"] == pytest.approx(0.0008)
    (request,) = fake_api.requests
    assert request.path == "/v1/messages?beta=true" and request.body["stream"] is True
    assert "APPENDED-MARK" in json.dumps(request.body["system"])
    assert request.headers["x-api-key"] == "sk-ant-fake-key"


def test_resume_carries_the_first_exchange(claude_bin: Path, fake_api: FakeApi, work: Path,
                                           env: dict[str, str]) -> None:
    first = run_claude(claude_argv(claude_bin, "First prompt"), work, env, timeout=TIMEOUT)
    session = first.result["session_id"]
    second = run_claude(claude_argv(claude_bin, "Second prompt", extra=["--resume", session]),
                        work, env, timeout=TIMEOUT)
    assert second.returncode == 0, second.stderr
    assert second.result["session_id"] == session
    assert second.result["total_cost_usd"] == pytest.approx(0.0016)  # it adds up over the session
    resumed = fake_api.requests_for_messages()[1].body
    assert "First prompt" in all_text(resumed) and "done: First prompt" in all_text(resumed)
    assert last_user_text(resumed) == "Second prompt"


def test_write_directives_create_files(claude_bin: Path, fake_api: FakeApi, work: Path,
                                       env: dict[str, str]) -> None:
    prompt = "Make two files\nWRITE a.txt: alpha\nWRITE sub dir/b.txt: beta\nSAY RESULT: ok"
    run = run_claude(claude_argv(claude_bin, prompt), work, env, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert (work / "a.txt").read_text() == "alpha\n"
    assert (work / "sub dir" / "b.txt").read_text() == "beta\n"
    assert run.result["result"] == "RESULT: ok" and run.result["num_turns"] == 3
    assert run.result["permission_denials"] == []
    assert run.result["usage"]["output_tokens"] == 60  # 20 per request, 3 requests
    assert len(run.of_type("user")) == 2  # the two tool results


def test_scripted_tool_use_runs_any_tool(claude_bin: Path, fake_api: FakeApi, work: Path,
                                         env: dict[str, str]) -> None:
    fake_api.script(ToolUse("Bash", {"command": "echo from-bash > out.txt",
                                     "description": "write a file"}), Text("bash ran"))
    run = run_claude(claude_argv(claude_bin, "anything"), work, env, timeout=TIMEOUT)
    assert run.result["result"] == "bash ran"
    assert (work / "out.txt").read_text() == "from-bash\n"


def test_final_text_is_configurable(claude_bin: Path, fake_api: FakeApi, work: Path,
                                    env: dict[str, str]) -> None:
    fake_api.final_text = "Finished.\nAGENT-LOOP: done"
    run = run_claude(claude_argv(claude_bin, "WRITE x.txt: y"), work, env, timeout=TIMEOUT)
    assert run.result["result"] == "Finished.\nAGENT-LOOP: done"
    assert (work / "x.txt").exists()


def test_skip_permissions_as_root_needs_is_sandbox(claude_bin: Path, fake_api: FakeApi,
                                                   work: Path, env: dict[str, str]) -> None:
    del env["IS_SANDBOX"]
    run = run_claude(claude_argv(claude_bin, "hi"), work, env, timeout=TIMEOUT)
    if os.geteuid() != 0:  # the refusal is for root only; elsewhere the flag just works
        assert run.returncode == 0, run.stderr
        return
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == ("--dangerously-skip-permissions cannot be used with root/sudo "
                          "privileges for security reasons\n")
    assert fake_api.requests == []


@pytest.mark.parametrize(("error", "text"), [
    (overloaded(), "API Error: 529 Overloaded (fake). This is a server-side issue"),
    (rate_limited(), "API Error: Request rejected (429) · Number of request tokens has exceeded"
                     " your per-minute rate limit (fake)"),
    (unauthorized(), "Invalid API key · Fix external API key"),
    (server_error(), "API Error: 500 Internal server error (fake). This is a server-side issue"),
], ids=["529", "429", "401", "500"])
def test_api_errors_without_retries(claude_bin: Path, fake_api: FakeApi, work: Path,
                                    env: dict[str, str], error: Any, text: str) -> None:
    fake_api.script(error)
    run = run_claude(claude_argv(claude_bin, "hi"), work, env, timeout=TIMEOUT)
    assert run.returncode == 1 and run.stderr == ""
    result = run.result
    assert result["is_error"] is True and result["subtype"] == "success"
    assert result["api_error_status"] == error.status
    assert result["api_error_type"] == error.error_type
    assert result["terminal_reason"] == "api_error" and result["total_cost_usd"] == 0
    assert result["result"].startswith(text)
    assert len(fake_api.requests) == 1  # CLAUDE_CODE_MAX_RETRIES=0: no retry


def test_a_retried_429_then_succeeds(claude_bin: Path, fake_api: FakeApi, work: Path,
                                     env: dict[str, str]) -> None:
    env["CLAUDE_CODE_MAX_RETRIES"] = "1"
    fake_api.script(rate_limited(retry_after=1))
    run = run_claude(claude_argv(claude_bin, "hi"), work, env, timeout=TIMEOUT)
    assert run.returncode == 0 and run.result["result"] == "done: hi"
    (retry,) = run.of_type("system", "api_retry")
    assert retry["error_status"] == 429 and retry["attempt"] == 1
    # The CLI retries by itself: the SDK's x-stainless-retry-count header stays "0".
    assert [r.headers["x-stainless-retry-count"] for r in fake_api.requests] == ["0", "0"]
    assert run.seconds >= 1  # it honoured retry-after


def test_usage_limit_with_a_subscription_login(claude_bin: Path, fake_api: FakeApi, work: Path,
                                               env: dict[str, str]) -> None:
    resets_at = int(time.time()) + 3600
    fake_api.script(usage_limit(resets_at))
    run = run_claude(claude_argv(claude_bin, "hi"), work, oauth_login(env), timeout=TIMEOUT)
    assert run.returncode == 1
    (event,) = run.of_type("rate_limit_event")
    assert event["rate_limit_info"]["status"] == "rejected"
    assert event["rate_limit_info"]["resetsAt"] == resets_at
    assert event["rate_limit_info"]["rateLimitType"] == "five_hour"
    result = run.result
    assert result["result"].startswith("You've hit your 5-hour limit · resets ")
    assert (result["api_error_status"], result["api_error"]) == (429, "usage_limit_reached")
    assert fake_api.requests[0].headers["authorization"] == "Bearer fake-oauth-token"
    assert len(fake_api.requests) == 1  # not retried


@pytest.mark.parametrize(("alias", "model_id"), [
    ("haiku", "claude-haiku-5-5"), ("sonnet", "claude-sonnet-5-5"), ("opus", "claude-opus-5-5")])
def test_model_aliases(claude_bin: Path, fake_api: FakeApi, work: Path, env: dict[str, str],
                       alias: str, model_id: str) -> None:
    fake_api.script(Text("small model"), model="haiku")
    run = run_claude(claude_argv(claude_bin, "hi", model=alias), work, env, timeout=TIMEOUT)
    assert [r.model for r in fake_api.requests] == [model_id]
    assert run.of_type("system", "init")[0]["model"] == model_id
    assert (run.result["result"] == "small model") == (alias == "haiku")


NASTY = "-x starts with a dash $(echo hi) `echo tick` 'single' \"double\" \\back\n\n  two\n--help\n"


@pytest.mark.parametrize("via", ["after --", "stdin"])
def test_a_nasty_prompt_arrives_unchanged(claude_bin: Path, fake_api: FakeApi, work: Path,
                                          env: dict[str, str], via: str) -> None:
    argv = claude_argv(claude_bin, NASTY if via == "after --" else None)
    run = run_claude(argv, work, env, stdin=NASTY if via == "stdin" else None, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert last_user_text(fake_api.requests[0].body) == NASTY


def test_stdin_text_is_appended_to_an_argv_prompt(
        claude_bin: Path, fake_api: FakeApi, work: Path, env: dict[str, str]) -> None:
    run = run_claude(claude_argv(claude_bin, "argv prompt"), work, env, stdin="from stdin",
                     timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert last_user_text(fake_api.requests[0].body) == "argv prompt\nfrom stdin"


def test_an_open_empty_stdin_delays_an_argv_prompt(
        claude_bin: Path, fake_api: FakeApi, work: Path, env: dict[str, str]) -> None:
    # A stdin pipe nobody writes or closes: the CLI waits 3 s for it, warns, then goes on.
    # agent-loop must give the CLI /dev/null (proc.stream does).
    start = time.monotonic()
    proc = subprocess.Popen(claude_argv(claude_bin, "hi"), cwd=work, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        # wait(), not communicate(): that would close stdin. The output fits the pipe buffers.
        proc.wait(timeout=TIMEOUT)
    finally:
        proc.kill()
        err = proc.communicate()[1]
    assert proc.returncode == 0 and time.monotonic() - start > 3
    assert err.startswith("Warning: no stdin data received in 3s, proceeding without it.")
    assert last_user_text(fake_api.requests[0].body) == "hi"


def test_a_dash_prompt_right_after_p_is_read_as_an_option(
        claude_bin: Path, fake_api: FakeApi, work: Path, env: dict[str, str]) -> None:
    argv = [str(claude_bin), "-p", NASTY, *claude_argv(claude_bin, None)[2:]]
    run = run_claude(argv, work, env, timeout=TIMEOUT)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == f"error: unknown option '{NASTY}'\n"
    assert fake_api.requests == []


def test_unknown_resume_id(claude_bin: Path, fake_api: FakeApi, work: Path,
                           env: dict[str, str]) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    run = run_claude(claude_argv(claude_bin, "hi", extra=["--resume", missing]), work, env,
                     timeout=TIMEOUT)
    assert run.returncode == 1
    assert run.stderr == f"No conversation found with session ID: {missing}\n"
    # stream-json still prints a result line (the json format prints nothing).
    result = run.result
    assert (result["subtype"], result["is_error"], result["num_turns"]) == (
        "error_during_execution", True, 0)
    assert result["session_id"] == missing
    assert fake_api.requests == []


def test_a_hung_api_times_out_and_sigint_leaves_no_result(
        claude_bin: Path, fake_api: FakeApi, work: Path, env: dict[str, str]) -> None:
    fake_api.script(Hang())
    hung: list[float] = []

    def hanging() -> bool:  # the 3 s count from the hung request, however slow the CLI starts
        if fake_api.requests and not hung:
            hung.append(time.monotonic())
        return bool(hung)

    began = time.monotonic()
    with pytest.raises(ClaudeTimedOut) as caught:
        run_claude(claude_argv(claude_bin, "hi"), work, env, timeout=3, since=hanging)
    run = caught.value.run
    # SIGINT ends it at once with exit 0 and, mostly, no result line; on a loaded machine it
    # sometimes still writes one with no answer in it. Either way nothing reads as a success
    # with an answer, so success must be judged by the result line, never the exit code.
    assert run.returncode == 0 and began + run.seconds < hung[0] + 3 + 2
    assert all(r.get("is_error") or not r.get("result") for r in run.of_type("result"))
    if not run.of_type("result"):
        assert run.lines[-1]["message"]["content"][0]["text"] == "[Request interrupted by user]"
    assert len(fake_api.requests) == 1
