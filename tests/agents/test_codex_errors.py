"""Codex's failures sorted into the loop's classes, and its JSONL read into a result, from the
messages and events measured on codex-cli 0.169.0 (tests/codex-cli/NOTES.md). No binary needed."""

from __future__ import annotations

import io
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from agentloop.agents import (
    BLOCKING,
    LIMIT,
    OTHER,
    TRANSIENT,
    AgentResult,
    AgentRun,
    Totals,
    priced,
)
from agentloop.agents.codex import toml_string
from agentloop.agents.codex_errors import classify, http_status, parse_reset
from agentloop.agents.codex_stream import CodexLog, error_line, judge
from agentloop.agents.common import LogFiles

NOW = datetime(2026, 11, 23, 5, 34, 10, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Codex prints resets in its local time; these tests fix it to UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def failed(error: str, **kw: object) -> AgentResult:
    return AgentResult(ok=False, exit_code=1, session_id=None, error=error, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("message, kind", [
    ("We’re currently experiencing high demand, which may cause temporary errors.", TRANSIENT),
    ("unexpected status 502 Bad Gateway: bad gateway, url: http://x/v1/responses", TRANSIENT),
    ("stream disconnected before completion: idle timeout", TRANSIENT),
    ("Reconnecting... waiting for network (Connection failed: error sending request)", TRANSIENT),
    ("unexpected status 401 Unauthorized: Incorrect API key provided: sk-x", BLOCKING),
    ("unexpected status 403 Forbidden: forbidden", BLOCKING),
    ("Missing environment variable: `OPENAI_API_KEY`.", BLOCKING),
    ("Quota exceeded. Check your plan and billing details.", BLOCKING),
    ("exceeded retry limit, last status: 429 Too Many Requests, request id: r", LIMIT),
    ("You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more "
     "credits or try again later.", LIMIT),
    ('{"error": {"type": "invalid_request_error", "message": "The model `x` does not exist"}}',
     OTHER),
    ("codex exit 1: Error: thread/resume: thread/resume failed: no rollout found for thread id "
     "0000 (code -32600)", OTHER),
])
def test_measured_messages(message: str, kind: str) -> None:
    result = failed(message, api_error_status=http_status(message))
    assert classify(result, NOW).kind == kind


def test_a_timeout_is_transient() -> None:
    assert classify(failed("timed out", timed_out=True), NOW).kind == TRANSIENT


def test_words_in_stderr_alone_do_not_classify() -> None:
    assert classify(failed("done badly", stderr="refresh token Missing environment variable"),
                    NOW).kind == OTHER


def test_reset_times() -> None:
    today = "You’ve hit your usage limit. Visit … or try again at 6:34 AM."
    assert parse_reset(today, NOW) == datetime(2026, 11, 23, 6, 34, tzinfo=timezone.utc).timestamp()
    # Earlier than now (minus the grace) is tomorrow.
    early = parse_reset("… Try again at 1:05 AM.", NOW)
    assert early == datetime(2026, 11, 24, 1, 5, tzinfo=timezone.utc).timestamp()
    # Cut-off minutes: 5:34 printed at 5:34:10 is now, not tomorrow.
    assert parse_reset("try again at 5:34 AM.", NOW) == datetime(
        2026, 11, 23, 5, 34, tzinfo=timezone.utc).timestamp()
    dated = "… or try again at Nov 25th, 2026 5:34 PM."
    assert parse_reset(dated, NOW) == datetime(2026, 11, 25, 17, 34,
                                               tzinfo=timezone.utc).timestamp()
    assert parse_reset("… try again at Jan 1st, 2027 12:00 AM.", NOW) == \
        datetime(2027, 1, 1, 0, 0, tzinfo=timezone.utc).timestamp()
    assert parse_reset("try again later.", NOW) is None
    assert parse_reset("try again at Feb 30th, 2027 1:00 PM.", NOW) is None
    limit = classify(failed(today), NOW)
    assert limit.kind == LIMIT and limit.resets_at == parse_reset(today, NOW)


def test_error_line_skips_a_backtrace() -> None:
    stderr = ("WARNING: x\nError: thread/resume failed: no rollout\n\nStack backtrace:\n"
              "  0: <unknown>\n")
    assert error_line(stderr) == "Error: thread/resume failed: no rollout"
    assert error_line("just this\n") == "just this"


def test_toml_string() -> None:
    import tomllib
    text = 'a "quoted" \\ line\nnext\tline é \x7f end'
    assert tomllib.loads("v = " + toml_string(text))["v"] == text


EVENTS = [
    {"type": "thread.started", "thread_id": "t-1"},
    {"type": "turn.started"},
    {"type": "item.started", "item": {"id": "item_0", "type": "command_execution",
                                      "command": "/bin/bash -lc 'ls -la'", "exit_code": None}},
    {"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
                                        "command": "/bin/bash -lc 'ls -la'",
                                        "aggregated_output": "x\n", "exit_code": 2}},
    {"type": "item.started", "item": {"id": "item_1", "type": "file_change",
                                      "changes": [{"path": "/w/a.py", "kind": "update"}]}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "file_change",
                                        "changes": [{"path": "/w/a.py", "kind": "update"}],
                                        "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message",
                                        "text": "all done"}},
    {"type": "turn.completed", "usage": {"input_tokens": 500, "cached_input_tokens": 300,
                                         "cache_write_input_tokens": 7, "output_tokens": 40}},
]


def feed(lines: list[bytes]) -> tuple[CodexLog, str, list[str]]:
    readable, raw, seen = io.StringIO(), io.BytesIO(), []
    log = CodexLog(LogFiles.held(readable, raw), seen.append)
    for line in lines:
        log.feed(line)
    assert raw.getvalue().count(b"\n") == len(lines)
    return log, readable.getvalue(), seen


def test_the_log_and_the_result(tmp_path: Path) -> None:
    log, text, seen = feed([json.dumps(e).encode() + b"\n" for e in EVENTS] + [b"garbage\n"])
    assert [a.text for a in seen] == ["$ ls -la", "patch update /w/a.py", "all done"]
    assert "→ $ ls -la" in text and "✗ exit 2: x" in text and "[not JSON] garbage" in text
    request = AgentRun("p", "m", tmp_path, tmp_path / "l", tmp_path / "r", resume="t-1",
                       before=Totals(0.0, {"input_tokens": 150, "cache_read_input_tokens": 100,
                                           "output_tokens": 10}))
    result = judge(0, False, log, "", request, 1.5)
    assert result.ok and result.text == "all done" and result.session_id == "t-1"
    assert result.totals.usage == {"input_tokens": 200, "cache_read_input_tokens": 300,
                                   "cache_creation_input_tokens": 7, "output_tokens": 40}
    assert result.usage == {"input_tokens": 50, "cache_read_input_tokens": 200,
                            "cache_creation_input_tokens": 7, "output_tokens": 30}
    assert result.num_turns == 3 and result.duration_ms == 1500 and not result.cost_known


def test_a_failed_turn_keeps_the_totals(tmp_path: Path) -> None:
    events = [EVENTS[0], EVENTS[1], {"type": "error", "message": "You’ve hit your usage limit. "
                                     "Try again at 6:34 AM."},
              {"type": "turn.failed", "error": {"message": "You’ve hit your usage limit. "
                                                          "Try again at 6:34 AM."}}]
    log, _, _ = feed([json.dumps(e).encode() for e in events])
    before = Totals(0.0, {"input_tokens": 9})
    request = AgentRun("p", "m", tmp_path, tmp_path / "l", tmp_path / "r", resume="t-1",
                       before=before)
    result = judge(1, False, log, "", request, 0.2)
    assert not result.ok and result.api_error == "usage_limit_reached"
    assert result.limit_resets_at is not None and result.usage == {"input_tokens": 0}
    assert result.totals.usage == {"input_tokens": 9}
    assert classify(result, NOW).kind == LIMIT


def test_no_turn_at_all(tmp_path: Path) -> None:
    log, _, _ = feed([])
    request = AgentRun("p", "m", tmp_path, tmp_path / "l", tmp_path / "r")
    result = judge(2, False, log, "error: unexpected argument '-x' found\n\nUsage: …\n", request,
                   0.1)
    assert not result.ok and result.error == "codex exit 2: error: unexpected argument '-x' found"
    assert result.session_id is None and result.num_turns is None


@pytest.mark.parametrize("end", ["killed", "timed out", "cut"])
def test_a_run_gone_before_its_usage_is_of_unknown_cost(tmp_path: Path, end: str) -> None:
    """A Codex run that began (thread.started) and ended without turn.completed (killed by the
    system, stopped at --task-timeout, its last line cut off) reports no tokens. Priced from its
    model's rates, it was recorded as costing exactly $0, known: every total and --budget read
    low without a word. A CLI that never began, or a turn that failed before the model answered
    anything, spent nothing."""
    lines = [json.dumps(e).encode() for e in EVENTS[:4]]
    if end == "cut":
        lines.append(json.dumps(EVENTS[-1]).encode()[:30])
    log, _, _ = feed(lines)
    request = AgentRun("p", "gpt-6.1-sol", tmp_path, tmp_path / "l", tmp_path / "r")
    code = {"killed": -9, "timed out": -15, "cut": 0}[end]
    result = priced(judge(code, end == "timed out", log, "", request, 3.0))
    assert not result.ok and result.session_id == "t-1"
    assert not result.cost_known, result
    never, _, _ = feed([])
    assert priced(judge(2, False, never, "error: bad flag", request, 0.1)).cost_known
    limit = {"message": "You’ve hit your usage limit. Try again at 6:34 AM."}
    refused, _, _ = feed([json.dumps(e).encode() for e in
                          [EVENTS[0], EVENTS[1], {"type": "turn.failed", "error": limit}]])
    assert priced(judge(1, False, refused, "", request, 0.1)).cost_known
    done, _, _ = feed([json.dumps(e).encode() for e in EVENTS])
    assert priced(judge(0, False, done, "", request, 1.0)).cost_usd > 0
