"""Reading `codex exec --json` output: a readable log as it comes, and the result.

The events (codex-cli 0.169.0, tests/codex-cli/NOTES.md): `thread.started` (thread_id),
`turn.started`, `item.started` / `item.updated` / `item.completed` (an `item` of type
agent_message, reasoning, command_execution, file_change, mcp_tool_call, web_search, todo_list or
error), top-level `error` (a failure, or "Reconnecting..." while Codex retries by itself), then
`turn.completed` (usage) or `turn.failed` (error.message). The output is read as untrusted: a
field of an unexpected type counts as absent.
"""

from __future__ import annotations

import shlex
import time
from datetime import datetime, timezone
from typing import Any, Callable

from agentloop.agents import Activity, AgentResult, AgentRun, Totals, unreported
from agentloop.agents.codex_errors import LIMIT_TEXT, http_status, parse_reset
from agentloop.agents.common import JsonLog, LogFiles, display

# Codex's usage keys -> the loop's. Codex counts cached tokens inside input_tokens (OpenAI's
# convention); the loop, like Claude, keeps them apart, so input_tokens is the uncached rest.
_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def usage_of(raw: Any) -> dict[str, int]:
    """`turn.completed.usage` in the loop's keys (see above)."""
    raw = _dict(raw)
    if not raw:
        return {}
    cached = _count(raw.get("cached_input_tokens"))
    return {"input_tokens": max(0, _count(raw.get("input_tokens")) - cached),
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": _count(raw.get("cache_write_input_tokens")),
            "output_tokens": _count(raw.get("output_tokens"))}


def _command(item: dict[str, Any]) -> str:
    """The command without Codex's `/bin/bash -lc '…'` wrapper, for people."""
    command = _str(item.get("command")) or "?"
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    wrapped = len(words) == 3 and words[0] in ("/bin/bash", "/bin/sh", "bash", "sh") \
        and words[1] in ("-lc", "-c")
    return words[2] if wrapped else command


class CodexLog(JsonLog):
    """Turns JSONL events into a readable log and remembers what matters for the result."""

    def __init__(self, files: LogFiles, on_activity: Callable[[Activity], None],
                 header: str | None = None) -> None:
        super().__init__(files, on_activity, header)
        self.thread_id: str | None = None
        self.text = ""                       # the last agent_message
        self.usage: dict[str, int] | None = None
        self.failed: str | None = None       # turn.failed's message
        self.errors: list[str] = []          # top-level error events, in order
        self.completed = False

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.thread_id = _str(event.get("thread_id")) or self.thread_id
            self.write(f"thread {self.thread_id}")
        elif kind in ("item.started", "item.completed"):
            self._item(_dict(event.get("item")), kind == "item.completed")
        elif kind == "turn.completed":
            self.completed = True
            self.usage = usage_of(event.get("usage"))
        elif kind == "turn.failed":
            self.failed = display(_dict(event.get("error")).get("message") or "turn failed", 600)
            self.write(f"✗ turn failed: {self.failed}")
        elif kind == "error":
            message = display(event.get("message") or "error", 600)
            self.errors.append(message)
            self.write(f"! {message}")
            self.said(message)

    def _item(self, item: dict[str, Any], done: bool) -> None:
        kind = item.get("type")
        if kind in _TOOL_ITEMS and not done:
            line = self._describe(item)
            self.write(f"→ {line}")
            self.called(line)
        elif kind == "command_execution":
            code = item.get("exit_code")
            mark = "←" if code == 0 else "✗"
            self.write(f"  {mark} exit {code}: {display(item.get('aggregated_output') or '', 200)}")
        elif kind in _TOOL_ITEMS:
            self.write(f"  {'✗' if item.get('status') == 'failed' else '←'} {item.get('status')}")
        elif kind == "agent_message" and done:
            text = item.get("text")
            if isinstance(text, str) and text.strip():
                self.text = text
                self.write(text)
                self.said(text)
        elif kind == "reasoning" and done:
            self.write(f"(thinking) {display(item.get('text') or '', 200)}")
        elif kind == "todo_list" and done:
            items = item.get("items")
            steps = [display(_dict(i).get("text") or "", 60) for i in items or []] \
                if isinstance(items, list) else []
            self.write("plan: " + "; ".join(steps))
        elif kind == "error" and done:
            self.write(f"! {display(item.get('message') or '', 300)}")

    def _describe(self, item: dict[str, Any]) -> str:
        kind = item.get("type")
        if kind == "command_execution":
            return f"$ {display(_command(item), 120)}"
        if kind == "file_change":
            changes = item.get("changes")
            listed = [f"{_dict(c).get('kind')} {_dict(c).get('path')}"
                      for c in changes or []] if isinstance(changes, list) else []
            return f"patch {display(', '.join(listed), 120)}"
        if kind == "mcp_tool_call":
            return f"mcp {item.get('server')}.{item.get('tool')}"
        return f"web search {display(item.get('query') or '', 120)}"


def error_line(stderr: str) -> str:
    """The line of Codex's stderr that says what went wrong: its last `Error: …` line (a Rust
    backtrace may follow it), else the last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    return (errors or lines or [""])[-1]


def judge(exit_code: int, timed_out: bool, log: CodexLog, stderr: str, request: AgentRun,
          seconds: float) -> AgentResult:
    """Success is exit 0 with a completed turn; a failed run says why in one line."""
    stderr_line = error_line(stderr)
    error: str | None = None
    if timed_out:
        error = "timed out"
    elif log.failed is not None:
        error = log.failed
    elif exit_code != 0 or not log.completed:
        last = log.errors[-1] if log.errors else stderr_line
        error = f"codex exit {exit_code}" + (f": {display(last, 300)}" if last else "")
    # turn.completed's usage adds up over the whole thread (measured): this run's part is the
    # rest after the resumed session's totals.
    earlier = request.before if request.resume else Totals()
    total = log.usage if log.usage is not None else dict(earlier.usage)
    usage = {k: max(0, v - earlier.usage.get(k, 0)) for k, v in total.items()}
    limited = error is not None and bool(LIMIT_TEXT.search(error))
    # Begun (thread.started) and gone before turn.completed said its tokens. A turn that failed
    # before the model answered anything (a usage limit, a refused key) spent nothing.
    answered = bool(log.tool_calls or log.text)
    gone = unreported(log.thread_id is not None,
                      log.usage is not None or (log.failed is not None and not answered))
    return AgentResult(
        ok=error is None, exit_code=exit_code, session_id=log.thread_id, text=log.text,
        error=error, cost_usd=0.0, cost_known=False, unreported=gone, usage=usage,
        totals=Totals(0.0, total),
        # Codex reports no count of model calls: each tool call is answered by one more.
        num_turns=log.tool_calls + 1 if log.completed or log.tool_calls else None,
        duration_ms=int(seconds * 1000),
        api_error_status=http_status(error or ""),
        api_error="usage_limit_reached" if limited else None,
        limit_resets_at=parse_reset_now(error) if limited and error else None,
        stderr=stderr[-2000:], timed_out=timed_out, model=request.model,
        subtype="completed" if log.completed else ("failed" if log.failed else None))


def parse_reset_now(message: str) -> float | None:
    """The reset a usage-limit message names, read against the moment it was printed."""
    return parse_reset(message, datetime.fromtimestamp(time.time(), timezone.utc))
