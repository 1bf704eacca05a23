"""How a failed Claude Code run sorts into the loop's error classes: a limit to wait out, a
transient fault, a blocker, its own budget cut, or other.

Decided from the CLI's structured fields first: its typed `api_error`, `api_error_status`,
`api_error_type` and a rejected `rate_limit_event`; the result text only where the CLI gives
nothing else (a credit balance, a missing login, a client-side request timeout). The wordings were
measured on Claude Code 2.1.330 against tests/support/fakeapi.py and read from its binary:

- `api_error` is the CLI's own cause of an API failure ("new values are added over time, so treat
  an unknown value as absent"); the CLI itself groups the kinds into try_again, fix_setup,
  switch_model, wait, blocked and a few more, which the sets below follow.
- A closed port, a cut connection and a DNS failure all carry `api_error: connection_failed`,
  e.g. `API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)`,
  `API Error: Connection dropped (ECONNRESET). ...`, `API Error: Can't reach the API server —
  check your internet or DNS (ENOTFOUND)`. The client's own timeout has no typed kind:
  `Request timed out. If the API is slow to answer, ... set API_TIMEOUT_MS above N.`
- No credentials: `Not logged in · Please run /login` with no status at all. A credit balance:
  HTTP 400 `invalid_request_error` with the result `Credit balance is too low`.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone, tzinfo

from agentloop.agents import BLOCKING, BUDGET, LIMIT, OTHER, TRANSIENT, AgentResult, Failure
from agentloop.agents.claude_stream import ROOT_REFUSAL
from agentloop.agents.reset_time import next_reset

# The result's subtype for a run cut short by --max-budget-usd (measured on 2.1.330).
BUDGET_CUT = "error_max_budget_usd"

# The CLI's `api_error` kinds, by what they mean for an unattended loop.
LIMIT_API_ERRORS = {"usage_limit_reached", "unattended_start_limit", "unattended_start_unconfirmed"}
TRANSIENT_API_ERRORS = {"connection_failed", "no_response", "stream_idle_timeout", "computer_slept"}
# The CLI's fix_setup and switch_model kinds: every later task would fail the same way.
BLOCKING_API_ERRORS = {
    "claude_code_version_too_old", "effort_requires_thinking", "advisor_incompatible",
    "stored_login_refused", "named_profile_unusable", "oauth_refresh_store_refused",
    "tls_untrusted_ca", "tls_cert_signature_failure", "gateway_content_type",
    "provider_credentials", "gateway_signin_required", "gateway_session_expired",
    "api_key_auth_disabled", "org_disabled_credential", "invalid_credential_header",
    "model_substitution_disabled", "field_not_granted", "network_edge_blocked",
    "model_requires_usage_credits", "long_context_credits_required", "no_allowed_fallback"}
# Known kinds that concern this task's content (too long a reply, a refused prompt, a hook's
# veto, ...): the advisor decides. A hook's refusal also says permission_error, so these are
# checked before the HTTP type.
OTHER_API_ERRORS = {
    "max_output_tokens", "dlp_request_denied", "safety_monitor_blocked", "hook_denied",
    "tool_history_mismatch", "autocompact_thrashing", "pdf_too_large", "pdf_password_protected",
    "media_removed", "consent_unanswered", "empty_completion", "malformed_tool_use_exhausted",
    "message_over_context_limit"}

BLOCKING_TYPES = {"authentication_error", "permission_error", "billing_error"}
TRANSIENT_TYPES = {"overloaded_error", "api_error", "timeout_error"}

# Prose, read only from the start of a result text (optionally after "API Error: "), so an
# agent's own final message that mentions such words is not mistaken for an API failure.
# Patterns, compiled by `re` (and kept in its cache) when a failed result is first read: compiled
# here, the four cost a run's start about 10 ms, and a run that goes well never reads one.
_PREFIX = r"^(?:API Error: (?:\d{3} )?)?"
LIMIT_TEXT = (_PREFIX + r"(?:Server is temporarily limiting requests|You've hit your "
              r"|You're out of usage credits)")
BLOCKING_TEXT = (
    _PREFIX + r"(?:Not logged in|Invalid API key|Invalid auth token|Credit balance is too low"
    r"|Your credit balance is too low|OAuth token revoked|Login expired|Login reached its time limit"
    r"|Failed to authenticate|Authentication required|Your ANTHROPIC_API_KEY belongs to a disabled"
    r"|Your organization has disabled|This organization has been disabled)")
TRANSIENT_TEXT = (
    _PREFIX + r"(?:Request timed out|Connection error|Connection (?:refused|dropped|lost)"
    r"|Connection to the API was lost|Can't reach the API server|fetch failed)"
    r"|^API Error: .*\b(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|socket hang up)\b")

# "resets 2:49am (UTC)", "resets 3pm", "resets Nov 24, 3pm (Europe/Berlin)",
# "resets Jan 2, 2027, 3:30pm (UTC)": the CLI's en-US forms (a date only when over 24 h away,
# a year only when it differs from this one; minutes cut off, not rounded).
RESET = (
    r"\bresets\s+(?:(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+"
    r"(?P<day>\d{1,2}),?\s+(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<half>[ap])\.?m\b\.?"
    r"(?:\s*\((?P<zone>[^()]+)\))?")


def classify(result: AgentResult, now: datetime | None = None) -> Failure:
    """Sort a failed result (ok False) into limit, transient, blocking or other."""
    detail = result.detail()
    texts = [t.strip() for t in (result.text, result.error or "") if t and t.strip()]

    def limit(label: str) -> Failure:
        resets = result.limit_resets_at
        if resets is None:
            moment = now or datetime.now(timezone.utc)
            resets = next((r for r in (parse_reset(t, moment) for t in texts) if r), None)
        # The wait names the reset in agent-loop's own clock: the CLI's (`· resets 3pm`) goes,
        # so a limit is said once, in one format.
        said = detail if resets is None else \
            re.sub(RESET, "", detail, flags=re.IGNORECASE).strip().rstrip("·").strip() or detail
        return Failure(LIMIT, f"{label}: {said}", resets)

    if result.subtype == BUDGET_CUT:
        return Failure(BUDGET, f"cut short by its own budget: {detail}")
    kind = result.api_error
    if kind in LIMIT_API_ERRORS:
        return limit("usage limit reached")
    if kind in BLOCKING_API_ERRORS:
        return Failure(BLOCKING, f"claude cannot work until this is fixed ({kind}): {detail}")
    if kind in TRANSIENT_API_ERRORS:
        return Failure(TRANSIENT, f"connection problem ({kind}): {detail}")
    if kind in OTHER_API_ERRORS:
        return Failure(OTHER, detail)
    if result.limit_resets_at is not None:
        return limit("usage limit reached")
    if result.timed_out:
        return Failure(TRANSIENT, "timed out")
    if ROOT_REFUSAL in result.stderr:
        return Failure(BLOCKING, "claude refuses to skip permissions as root: run agent-loop as a "
                                 "normal user, or set IS_SANDBOX=1 on a disposable machine")
    status, api_type = result.api_error_status, result.api_error_type
    if status == 429 or api_type == "rate_limit_error":
        if any(re.match(LIMIT_TEXT, t, re.IGNORECASE) for t in texts):
            return limit("the API is limiting requests")
        return limit("rate limited (HTTP 429)")
    if status in (401, 403) or api_type in BLOCKING_TYPES:
        what = "billing problem" if api_type == "billing_error" else "not authorized"
        return Failure(BLOCKING, f"{what} ({_http(status, api_type)}): {detail}")
    if (status is not None and status >= 500) or api_type in TRANSIENT_TYPES:
        return Failure(TRANSIENT, f"API error ({_http(status, api_type)}): {detail}")
    if any(re.match(LIMIT_TEXT, t, re.IGNORECASE) for t in texts):
        return limit("usage limit reached")
    if any(re.match(BLOCKING_TEXT, t, re.IGNORECASE) for t in texts):
        return Failure(BLOCKING, f"claude cannot work until this is fixed: {detail}")
    if any(re.search(TRANSIENT_TEXT, t, re.IGNORECASE) for t in texts):
        return Failure(TRANSIENT, f"connection problem: {detail}")
    return Failure(OTHER, detail)


def _http(status: int | None, api_type: str | None) -> str:
    """`HTTP 401, authentication_error`, or the half of it the CLI gave (a gateway's status
    may come with no type)."""
    return ", ".join(part for part in (f"HTTP {status}" if status is not None else "",
                                       api_type or "") if part)


def _zone(name: str | None) -> tzinfo | None:
    """The zone the CLI named, or None for this machine's local time."""
    if not name:
        return None
    name = name.strip()
    if name.upper() in ("UTC", "GMT", "ETC/UTC"):
        return timezone.utc
    from zoneinfo import ZoneInfo  # read when a limit names its zone, not at every start

    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        # The CLI prints the zone it runs in, which is ours too: local time is the best guess.
        return None


def parse_reset(text: str, now: datetime) -> float | None:
    """Unix seconds of the reset a text like `… · resets 2:49am (UTC)` names: the next such
    time after `now` (naive: UTC), in the zone in parentheses, else local time; None if none."""
    found = re.search(RESET, text, re.IGNORECASE)
    return next_reset(found, now, _zone(found["zone"])) if found else None
