"""How a failed Codex CLI run sorts into the loop's error classes.

`codex exec --json` reports a failed turn only as text: an `error` event and then
`turn.failed` with `error.message`, no status or type field. The wordings below were measured on
codex-cli 0.169.0 against tests/support/fake_openai.py (tests/codex-cli/NOTES.md) and read from
its source (codex-rs: `CodexErr`'s messages, `UsageLimitReachedError`):

- a usage limit (HTTP 429 with `error.type: usage_limit_reached`): `You’ve hit your usage limit.
  … try again at 6:34 AM.` (the reset today, in Codex's local time, minutes cut off), `… try
  again at Nov 25th, 2026 5:34 AM.` (another day), `… try again later.` (no reset sent);
- another 429: `exceeded retry limit, last status: 429 Too Many Requests, request id: …`;
- a 500: `We’re currently experiencing high demand, which may cause temporary errors.`;
- other statuses: `unexpected status 401 Unauthorized: <the API's message>, url: …`;
- no key: `Missing environment variable: `OPENAI_API_KEY`.`;
- an unknown thread to resume: exit 1, nothing on stdout, stderr `Error: thread/resume: …
  no rollout found for thread id <id>`.
"""

from __future__ import annotations

import re
from datetime import datetime

from agentloop.agents import BLOCKING, LIMIT, OTHER, TRANSIENT, AgentResult, Failure
from agentloop.agents.reset_time import next_reset

# Codex writes a typographic apostrophe (You’ve); both are accepted.
LIMIT_TEXT = re.compile(r"You[’']ve hit your usage limit|Your workspace is out of credits"
                        r"|You hit your spend cap", re.IGNORECASE)
BLOCKING_TEXT = re.compile(
    r"Missing environment variable|Quota exceeded\. Check your plan|To use Codex with your "
    r"ChatGPT plan|refresh token|log ?in again|Not logged in|Incorrect API key|invalid_api_key"
    r"|Access blocked by Cloudflare", re.IGNORECASE)
TRANSIENT_TEXT = re.compile(
    r"experiencing high demand|stream disconnected|Connection failed|error sending request"
    r"|Reconnecting|request timed out|timeout waiting|Selected model is at capacity"
    r"|Error while reading the server response|agent loop died", re.IGNORECASE)
# "unexpected status 401 Unauthorized", "last status: 429 Too Many Requests"
STATUS = re.compile(r"(?:unexpected status|last status:) (\d{3})\b")

# "try again at 6:34 AM." / "try again at Nov 25th, 2026 5:34 AM." (chrono's `%-I:%M %p`,
# `%b %-d<st|nd|rd|th>, %Y %-I:%M %p`, in Codex's local time zone).
RESET = re.compile(
    r"try again at (?:(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+"
    r"(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4}),?\s+)?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[ap])\.?m\b", re.IGNORECASE)


def http_status(message: str) -> int | None:
    """The HTTP status a Codex error message names, if any."""
    found = STATUS.search(message)
    return int(found.group(1)) if found else None


def parse_reset(text: str, now: datetime) -> float | None:
    """Unix seconds of the reset a usage-limit message names, read in this machine's local time
    (Codex runs with our environment, so its local zone is ours); None when it names none.

    A time without a date is the next such time after `now` (naive: UTC).
    """
    found = RESET.search(text)
    return next_reset(found, now, None) if found else None


def classify(result: AgentResult, now: datetime) -> Failure:
    """Sort a failed result (ok False) into limit, transient, blocking or other."""
    detail = result.detail()
    # Only our one-line error: it holds Codex's final message, or its stderr's last line when
    # it printed no turn at all; the rest of stderr is log noise that could match anything.
    texts = [result.error] if result.error and result.error.strip() else []
    if result.timed_out:
        return Failure(TRANSIENT, "timed out")
    if result.api_error == "usage_limit_reached" or any(LIMIT_TEXT.search(t) for t in texts):
        resets = result.limit_resets_at
        if resets is None:
            resets = next((r for r in (parse_reset(t, now) for t in texts) if r), None)
        return Failure(LIMIT, f"usage limit reached: {detail}", resets)
    status = result.api_error_status
    if status == 429:
        return Failure(LIMIT, f"rate limited (HTTP 429): {detail}")
    if status in (401, 403) or any(BLOCKING_TEXT.search(t) for t in texts):
        return Failure(BLOCKING, f"codex cannot work until this is fixed: {detail}")
    if (status is not None and status >= 500) or any(TRANSIENT_TEXT.search(t) for t in texts):
        return Failure(TRANSIENT, f"API or connection problem: {detail}")
    return Failure(OTHER, detail)
