"""failures.py: error classes from the real CLI's output, and reset times read from its text."""

from __future__ import annotations

import io
import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from freezegun import freeze_time
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.agents import AgentResult, Failure
from agentloop.agents.claude_errors import classify, parse_reset
from agentloop.agents.claude_stream import StreamLog, judge
from agentloop.agents.common import LogFiles
from agentloop.agents.reset_time import RESET_GRACE_SECONDS

SAMPLES = Path(__file__).resolve().parents[1] / "claude-cli" / "samples"
UTC = timezone.utc


def judged(lines: list[bytes], exit_code: int = 1, timed_out: bool = False,
           stderr: str = "") -> AgentResult:
    log = StreamLog(LogFiles.held(io.StringIO(), io.BytesIO()), lambda _: None)
    for line in lines:
        log.feed(line)
    result = judge(exit_code, timed_out, log, stderr)
    assert not result.ok
    return result


def sample(name: str) -> AgentResult:
    path = SAMPLES / name
    if not path.exists():
        pytest.fail(f"missing recorded sample {path} (tests/claude-cli/samples/README.md says "
                    "where they come from)")
    return judged(path.read_bytes().splitlines(keepends=True))


def result_line(text: str | None, **fields: Any) -> bytes:
    """A result line as CLI 2.1.330 printed it for an API failure (fields measured, trimmed)."""
    line = {"type": "result", "subtype": "success", "is_error": True, "result": text,
            "session_id": "9f9b6e2f-7ef9-4922-91be-1192dd82b435", "total_cost_usd": 0,
            "num_turns": 1, "terminal_reason": "api_error", "api_error_status": None, **fields}
    return json.dumps(line).encode() + b"\n"


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC)


def utc(stamp: str) -> float:
    return at(stamp).timestamp()


# -- the recorded samples ------------------------------------------------------------------------

def test_usage_limit_takes_the_exact_reset_from_the_rate_limit_event() -> None:
    failure = classify(sample("ratelimit-5h-oauth-stream.jsonl"), now=at("2026-11-22T01:49:47"))
    assert failure.kind == "limit"
    assert failure.resets_at == 1795315786          # 02:49:46 UTC, from resetsAt
    assert "5-hour limit" in failure.reason


@freeze_time("2026-11-22T01:49:47Z")
def test_usage_limit_without_the_event_reads_the_reset_from_the_text() -> None:
    # "You've hit your 5-hour limit · resets 2:49am (UTC)"
    result = sample("ratelimit-5h-oauth.json")
    assert result.api_error == "usage_limit_reached" and result.limit_resets_at is None
    failure = classify(result)                      # `now` from the (frozen) clock
    assert failure.kind == "limit"
    assert failure.resets_at == utc("2026-11-22T02:49:00")


def test_plain_api_key_429_is_a_limit_without_reset_time() -> None:
    failure = classify(sample("4d-ratelimit-maxretries0.json"))
    assert failure == Failure("limit", failure.reason, None)
    assert "429" in failure.reason


def test_overloaded_is_transient_401_blocking_400_other() -> None:
    assert classify(sample("4d-overloaded-maxretries0.json")).kind == "transient"
    blocking = classify(sample("error-401-apikey.json"))
    assert blocking.kind == "blocking" and "Invalid API key" in blocking.reason
    assert classify(sample("error-400-apikey.json")).kind == "other"


# -- results measured on the real CLI 2.1.330 (tests/support/fakeapi.py, closed ports, no login) --

MEASURED = [
    # nothing listening on the port (exit 1, stderr empty)
    ("transient", result_line("API Error: Connection refused — a firewall or proxy may be blocking "
                              "it (ECONNREFUSED)", api_error="connection_failed")),
    # a server that accepts and closes the connection
    ("transient", result_line("API Error: Connection dropped (ECONNRESET). Check the gateway set "
                              "in ANTHROPIC_BASE_URL, then try again.",
                              api_error="connection_failed")),
    ("transient", result_line("API Error: Can't reach the API server — check your internet or DNS "
                              "(ENOTFOUND)", api_error="connection_failed")),
    # API_TIMEOUT_MS=2000 against a request that never answers: no typed kind at all
    ("transient", result_line("Request timed out. If the API is slow to answer, or a proxy or "
                              "gateway holds responses, set API_TIMEOUT_MS above 2000.")),
    ("transient", result_line("API Error: 500 Internal server error (fake). This is a server-side "
                              "issue, usually temporary — try again in a moment.",
                              api_error_status=500, api_error_type="api_error")),
    # no ANTHROPIC_API_KEY and no login: no request, no status
    ("blocking", result_line("Not logged in · Please run /login")),
    ("blocking", result_line("Credit balance is too low", api_error_status=400,
                             api_error_type="invalid_request_error")),
    ("blocking", result_line("API Error: 402 billing problem (fake)", api_error_status=402,
                             api_error_type="billing_error")),
    ("blocking", result_line("Failed to authenticate. API Error: 403 not allowed (fake)",
                             api_error_status=403, api_error_type="permission_error")),
    ("blocking", result_line("Your ANTHROPIC_API_KEY belongs to a disabled organization · Update "
                             "or unset the environment variable", api_error_status=400,
                             api_error_type="invalid_request_error",
                             api_error="org_disabled_credential")),
    # a 429 without the representative-claim header, logged in with a subscription
    ("limit", result_line("API Error: Server is temporarily limiting requests (not your usage "
                          "limit) · slow down (fake)", api_error_status=429,
                          api_error_type="rate_limit_error")),
]


@pytest.mark.parametrize("kind,line", MEASURED,
                         ids=[f"{k}-{i}" for i, (k, _) in enumerate(MEASURED)])
def test_measured_results(kind: str, line: bytes) -> None:
    failure = classify(judged([line]), now=at("2026-01-01T00:00:00"))
    assert failure.kind == kind
    assert failure.reason
    if kind == "limit":
        assert failure.resets_at is None


def test_unknown_session_is_other_so_the_runner_starts_fresh() -> None:
    # Exactly what the CLI printed for `--resume <unknown uuid>` in stream-json mode.
    line = result_line(None, subtype="error_during_execution", num_turns=0)
    result = judged([line], stderr="No conversation found with session ID: 0ca626a3-5835-4434-aa6a-"
                                   "b8491052c05d\n")
    failure = classify(result)
    assert failure.kind == "other" and "No conversation found" in failure.reason


def test_structured_fields_win_over_prose() -> None:
    # A hook's refusal says permission_error, yet it is about this task, not the login.
    hook = judged([result_line("API Error: 403 blocked by hook", api_error_status=403,
                               api_error_type="permission_error", api_error="hook_denied")])
    assert classify(hook).kind == "other"
    # An unknown api_error is treated as absent: the status decides.
    future = judged([result_line("API Error: 529 Overloaded", api_error_status=529,
                                 api_error_type="overloaded_error", api_error="something_new")])
    assert classify(future).kind == "transient"


def test_an_agents_own_words_are_not_an_api_error() -> None:
    # The agent ended with is_error and a message that merely mentions these words.
    text = ("I could not run the tests: the database gave ECONNREFUSED, the Connection refused and "
            "the Request timed out. Not logged in to npm either; credit balance is too low.")
    assert classify(judged([result_line(text)])).kind == "other"


def test_timeout_crash_and_root() -> None:
    assert classify(judged([], timed_out=True)) == Failure("transient", "timed out")
    assert classify(judged([], exit_code=-9)).kind == "other"
    root = judged([], stderr="--dangerously-skip-permissions cannot be used with root/sudo "
                             "privileges for security reasons\n")
    assert classify(root).kind == "blocking"


def test_usage_limit_by_text_alone_and_by_event_alone() -> None:
    now = at("2026-11-20T10:00:00")
    text_only = judged([result_line("You've hit your weekly limit · resets Nov 24, 3pm (UTC)")])
    assert classify(text_only, now) == Failure("limit", classify(text_only, now).reason,
                                               utc("2026-11-24T15:00:00"))
    event = (b'{"type":"rate_limit_event","rate_limit_info":{"status":"rejected",'
             b'"resetsAt":1795315786,"rateLimitType":"seven_day"}}\n')
    event_only = judged([event, result_line("API Error: something else")])
    assert classify(event_only, now).resets_at == 1795315786


# -- parse_reset ----------------------------------------------------------------------------------

@pytest.fixture
def local_zone() -> Iterator[Any]:
    """Set the process's local zone (TZ) for a test, and put the old one back."""
    old = os.environ.get("TZ")

    def set_zone(name: str) -> None:
        os.environ["TZ"] = name
        time.tzset()
    yield set_zone
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.mark.parametrize("text,now,expected", [
    ("You've hit your 5-hour limit · resets 2:49am (UTC)", "2026-11-22T01:49:47",
     "2026-11-22T02:49"),
    # across midnight: 2:49am has passed today, so it is tomorrow's
    ("resets 2:49am (UTC)", "2026-11-22T23:30:00", "2026-11-23T02:49"),
    ("resets 2:49am (UTC)", "2026-12-31T23:30:00", "2027-01-01T02:49"),
    # minutes are cut off: at 2:49:30 "2:49am" is now, not tomorrow
    ("resets 2:49am (UTC)", "2026-11-22T02:49:30", "2026-11-22T02:49"),
    ("resets 2:49am (UTC)", "2026-11-22T02:55:00", "2026-11-23T02:49"),
    ("resets 12am (UTC)", "2026-06-01T22:00:00", "2026-06-02T00:00"),
    ("resets 12:30am (UTC)", "2026-06-01T00:10:00", "2026-06-01T00:30"),
    ("resets 12pm (UTC)", "2026-06-01T09:00:00", "2026-06-01T12:00"),
    ("resets 12:05pm (UTC)", "2026-06-01T13:00:00", "2026-06-02T12:05"),
    ("resets 11pm (UTC)", "2026-06-01T09:00:00", "2026-06-01T23:00"),
    # a zone in parentheses, winter and summer time, and the night the clocks go forward
    ("resets 3pm (Europe/Berlin)", "2026-01-15T10:00:00", "2026-01-15T14:00"),
    ("resets 3pm (Europe/Berlin)", "2026-07-15T10:00:00", "2026-07-15T13:00"),
    ("resets 3am (Europe/Berlin)", "2026-03-28T23:30:00", "2026-03-29T01:00"),
    ("resets 1am (America/Los_Angeles)", "2026-01-15T10:00:00", "2026-01-16T09:00"),
    # over 24 hours away the CLI adds the date, and the year when it is not this one
    ("resets Nov 24, 3pm (Europe/Berlin)", "2026-11-20T10:00:00", "2026-11-24T14:00"),
    ("resets Nov 24, 3:30pm (UTC)", "2026-11-20T10:00:00", "2026-11-24T15:30"),
    ("resets Jan 2, 2027, 3pm (UTC)", "2026-12-30T10:00:00", "2027-01-02T15:00"),
    ("resets Jan 2, 3pm (UTC)", "2026-12-30T10:00:00", "2027-01-02T15:00"),
    ("You've hit your weekly limit. It resets Nov 24, 3pm (UTC).", "2026-11-20T00:00:00",
     "2026-11-24T15:00"),
])
def test_parse_reset(text: str, now: str, expected: str) -> None:
    assert parse_reset(text, at(now)) == utc(expected)


@pytest.mark.parametrize("text", [
    "resets soon", "resets 13pm (UTC)", "resets 0am (UTC)", "resets 2:75am (UTC)",
    "resets Feb 30, 3pm (UTC)", "You've hit your limit", "", "API Error: 500 resets",
    "Server is temporarily limiting requests (not your usage limit)",
])
def test_unparseable_reset_is_none(text: str) -> None:
    assert parse_reset(text, at("2026-01-01T00:00:00")) is None


@freeze_time("2026-01-15T10:00:00Z")
def test_without_zone_it_is_local_time(local_zone: Any) -> None:
    local_zone("America/New_York")                  # 05:00 there
    assert parse_reset("resets 3pm", datetime.now(UTC)) == utc("2026-01-15T20:00:00")
    assert parse_reset("resets 4am", datetime.now(UTC)) == utc("2026-01-16T09:00:00")
    # A zone name this machine does not know: the CLI runs here too, so local time.
    assert parse_reset("resets 3pm (Mars/Olympus)", datetime.now(UTC)) == utc("2026-01-15T20:00:00")
    local_zone("UTC")
    assert parse_reset("resets 3pm", datetime.now(UTC)) == utc("2026-01-15T15:00:00")
    # A naive `now` is read as UTC (as freezegun's clock is).
    assert parse_reset("resets 3pm", datetime(2026, 1, 15, 16, 0)) == utc("2026-01-16T15:00:00")


@settings(max_examples=300, deadline=None)
@given(now=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                        timezones=st.just(UTC)),
       hour=st.integers(1, 12), minute=st.integers(0, 59), half=st.sampled_from(["am", "pm"]),
       zone=st.sampled_from(["UTC", "Europe/Berlin", "Asia/Kolkata", "America/New_York"]))
def test_reset_is_the_next_such_wall_time(now: datetime, hour: int, minute: int, half: str,
                                          zone: str) -> None:
    from zoneinfo import ZoneInfo
    shown = f"{hour}:{minute:02d}{half}" if minute else f"{hour}{half}"
    stamp = parse_reset(f"You've hit your 5-hour limit · resets {shown} ({zone})", now)
    assert stamp is not None
    assert now.timestamp() - RESET_GRACE_SECONDS <= stamp <= (now + timedelta(hours=25)).timestamp()
    wall = datetime.fromtimestamp(stamp, ZoneInfo(zone))
    if wall.utcoffset() == datetime.fromtimestamp(stamp - 7200, ZoneInfo(zone)).utcoffset():
        # away from a clock change the wall time is exactly the one shown
        assert (wall.hour % 12 or 12, wall.minute) == (hour, minute)
        assert (wall.hour >= 12) == (half == "pm")


@pytest.mark.parametrize("fields", [{"api_error_status": 403}, {"api_error_status": 503},
                                    {"api_error_type": "overloaded_error"}])
def test_a_status_without_its_type_or_a_type_without_its_status_says_no_none(
        fields: dict[str, Any]) -> None:
    # A gateway in front of the API may answer with a status the CLI has no type for.
    failure = classify(judged([result_line("API Error: gateway said no", **fields)]))
    assert failure.kind in ("blocking", "transient")
    assert "None" not in failure.reason, failure.reason
    assert str(fields.get("api_error_status", "overloaded_error")) in failure.reason
