"""Reading Claude Code's stream-json output: a readable log as it comes, and the result.

The CLI's output is read as untrusted: a field of an unexpected type counts as absent, so nothing
downstream (the state, the console, a --resume argument) ever holds a stray type.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from agentloop.agents import Activity, AgentResult, AgentRun, Totals, unreported
from agentloop.agents.common import JsonLog, LogFiles, display

# What claude says on stderr when it refuses --dangerously-skip-permissions as root: looked for
# after every run (agentloop.agents.claude), so it is here rather than with the error kinds
# (agentloop.agents.claude_errors), which only a failed run loads.
ROOT_REFUSAL = "cannot be used with root/sudo privileges"


def describe_tool(name: str, args: dict[str, Any]) -> str:
    """One short line for a tool call: the tool and its main argument."""
    for key in ("file_path", "command", "path", "pattern", "url", "query", "description", "prompt"):
        if key in args:
            return f"{name} {display(args[key], 120)}"
    return name




class StreamLog(JsonLog):
    """Turns stream-json lines into a readable log and remembers what matters for the result."""

    def __init__(self, files: LogFiles, on_activity: Callable[[Activity], None],
                 header: str | None = None) -> None:
        super().__init__(files, on_activity, header)
        self._messages: set[str] = set()
        self.session_id: str | None = None
        self.result: dict[str, Any] | None = None
        self.rate_limit: dict[str, Any] | None = None
        self.model: str | None = None

    def event(self, event: dict[str, Any]) -> None:
        """One line of Claude's stream-json."""
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.session_id = _str(event.get("session_id")) or self.session_id
            self.model = _str(event.get("model")) or self.model
            self.write(f"session {self.session_id} · model {self.model} · cwd {event.get('cwd')}")
        elif kind == "assistant":
            self._assistant(_dict(event.get("message")))
        elif kind == "user":
            self._tool_results(_dict(event.get("message")))
        elif kind == "rate_limit_event":
            info = _dict(event.get("rate_limit_info"))
            if info.get("status") not in (None, "allowed"):
                self.rate_limit = info
                self.write(f"rate limit: {info.get('status')} ({info.get('rateLimitType')}), "
                           f"resets at {info.get('resetsAt')}")
        elif kind == "result":
            self.result = event
            self.session_id = _str(event.get("session_id")) or self.session_id

    def _assistant(self, message: dict[str, Any]) -> None:
        # A turn is one model message; the CLI sends each of its content blocks as an event of
        # its own with the same message id (measured), so ids are counted, not events.
        ident = _str(message.get("id")) or f"#{len(self._messages)}"
        if ident not in self._messages:
            self._messages.add(ident)
            self.turns += 1
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str) and text.strip():
                self.write(text)
                self.said(text)
            elif block.get("type") == "tool_use":
                line = describe_tool(str(block.get("name")), _dict(block.get("input")))
                self.write(f"→ {line}")
                self.called(line)

    def _tool_results(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                body = block.get("content")
                if isinstance(body, list):
                    body = " ".join(str(b.get("text", "")) for b in body if isinstance(b, dict))
                mark = "✗" if block.get("is_error") else "←"
                self.write(f"  {mark} {display(body or '', 200)}")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _num(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and math.isfinite(value) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _usage(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return {k: int(n) for k in keys if (n := _num(raw.get(k))) is not None}


def judge(exit_code: int, timed_out: bool, log: StreamLog, stderr: str,
          request: AgentRun | None = None) -> AgentResult:
    """Decide success from the exit code and `is_error` together (the CLI's `subtype` can say
    "success" on an API failure), and say why a failed run failed."""
    res = log.result or {}
    error: str | None = None
    stderr_line = " ".join(stderr.strip().splitlines()[-1:])
    if timed_out:
        error = "timed out"
    elif log.result is None:
        error = f"no result line from claude (exit {exit_code})"
        if stderr_line:
            error += f": {stderr_line}"
        elif log.garbage:
            error += f"; {log.garbage} line(s) of non-JSON output"
    elif res.get("is_error") or exit_code != 0:
        errors = res.get("errors")
        listed = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
        error = display(res.get("result") or listed or stderr_line or f"exit {exit_code}", 300)
        if exit_code != 0 and not res.get("is_error"):
            error = f"exit {exit_code}: {error}"
    # total_cost_usd adds up over a resumed session (measured): this run's part is the rest.
    total = _num(res.get("total_cost_usd")) or 0.0
    earlier = request.before if request is not None and request.resume else Totals()
    cost = max(0.0, total - earlier.cost_usd)
    usage = _usage(res.get("usage"))
    totals = Totals(total, {k: earlier.usage.get(k, 0) + usage.get(k, 0)
                           for k in set(earlier.usage) | set(usage)})
    denials = res.get("permission_denials")
    status = res.get("api_error_status")
    api_error, api_error_type = res.get("api_error"), res.get("api_error_type")
    resets = _num((log.rate_limit or {}).get("resetsAt"))
    # Begun (its init line said a session) and gone before its result line.
    gone = unreported(log.session_id is not None, log.result is not None)
    return AgentResult(
        ok=error is None, exit_code=exit_code, session_id=log.session_id,
        text=str(res.get("result") or ""), error=error,
        cost_usd=cost, totals=totals,
        cost_known=not gone, unreported=gone,
        usage=usage, num_turns=_int(res.get("num_turns")),
        duration_ms=_int(res.get("duration_ms")),
        permission_denials=len(denials) if isinstance(denials, list) else 0,
        api_error_status=_int(status),
        api_error=str(api_error) if api_error else None,
        api_error_type=str(api_error_type) if api_error_type else None,
        limit_resets_at=resets,
        stderr=stderr[-2000:], timed_out=timed_out, model=log.model,
        subtype=str(res["subtype"]) if res.get("subtype") else None)
