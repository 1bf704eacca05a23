"""A fake Anthropic Messages API on 127.0.0.1, enough for the real Claude Code CLI to run a task.

It records every request and answers `POST /v1/messages` with a streamed (SSE) reply. What it
answers comes from a queue of scripted replies when one matches, else from directives in the task
text (`directive_reply`), so an end-to-end test can be written as plain prompt lines.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Union, cast

from tests.support import loopback
from tests.support.loopback import Directed, Hang, LoopbackServer, RecordingHandler, sse


@dataclass(frozen=True)
class Text:
    """A final text reply (stop_reason end_turn)."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A reply that calls one tool (stop_reason tool_use); `text` optionally precedes the call."""

    name: str
    input: dict[str, Any]
    text: str = ""


@dataclass(frozen=True)
class HttpError:
    """An HTTP error with an Anthropic-style JSON body and extra response headers."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


Reply = Union[Text, ToolUse, HttpError, Hang, Directed]


def rate_limited(retry_after: int = 1) -> HttpError:
    """A plain 429, the kind the CLI retries (per `retry-after`) and then reports."""
    return HttpError(429, "rate_limit_error",
                     "Number of request tokens has exceeded your per-minute rate limit (fake)",
                     {"retry-after": str(retry_after)})


def overloaded() -> HttpError:
    """A 529 overloaded_error."""
    return HttpError(529, "overloaded_error", "Overloaded (fake)")


def server_error() -> HttpError:
    """A 500 api_error."""
    return HttpError(500, "api_error", "Internal server error (fake)")


def unauthorized() -> HttpError:
    """A 401 authentication_error."""
    return HttpError(401, "authentication_error", "invalid x-api-key (fake)")


def usage_limit(resets_at: int, claim: str = "five_hour") -> HttpError:
    """A subscription usage limit; the CLI only reads it when logged in with an OAuth token."""
    return HttpError(429, "rate_limit_error", "usage limit reached (fake)", {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(resets_at),
        "anthropic-ratelimit-unified-representative-claim": claim,
    })


class Request(loopback.Request):
    """One Messages API request as the fake received it."""

    @property
    def is_messages(self) -> bool:
        """Whether this is a Messages API call (the CLI adds `?beta=true`)."""
        return self.posted_to("/v1/messages")


def _text_blocks(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if b.get("type") == "text"]


def _prompt_index(body: dict[str, Any]) -> int:
    """Index of the last user message that holds text of its own, not only tool results."""
    messages = body.get("messages", [])
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and any(
                not t.lstrip().startswith("<system-reminder>") for t in _text_blocks(messages[i])):
            return i
    return -1


def last_user_text(body: dict[str, Any]) -> str:
    """The task text of the latest user turn, without the CLI's `<system-reminder>` blocks.

    Not `messages[-1]`: the CLI ends the list with a role `system` message (environment details),
    and after a tool call the latest user message holds only tool results.
    """
    i = _prompt_index(body)
    if i < 0:
        return ""
    texts = _text_blocks(body["messages"][i])
    return "\n".join(t for t in texts if not t.lstrip().startswith("<system-reminder>"))


def all_text(body: dict[str, Any]) -> str:
    """Every text in the request (system prompt and all messages), for "does X reach the model"."""
    system = body.get("system", "")
    parts = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    for message in body.get("messages", []):
        parts.extend(_text_blocks(message))
    return "\n".join(parts)


def working_directory(body: dict[str, Any]) -> str:
    """The CLI's cwd as its environment details state it."""
    found = re.search(r"Primary working directory: (.+)", all_text(body))
    if not found:
        raise ValueError("no working directory in the request")
    return found.group(1)


def _require_write_tool(body: dict[str, Any], name: str = "Write",
                        fields: frozenset[str] = frozenset({"file_path", "content"})) -> None:
    """Refuse loudly when the CLI's file-writing tool (or `name`) is not the one this fake
    knows."""
    for tool in body.get("tools", []):
        if tool.get("name") == name:
            if fields <= set(tool.get("input_schema", {}).get("properties", {})):
                return
            raise ValueError(f"the {name} tool changed its input schema: {tool['input_schema']}")
    names = [tool.get("name") for tool in body.get("tools", [])]
    raise ValueError(f"the CLI offered no {name} tool, only {names}")


WRITE = re.compile(r"^WRITE (.+?): ?(.*)$", re.MULTILINE)
# `RUN <command line>`: one call of the CLI's Bash tool, in its place among the WRITE lines.
STEP = re.compile(r"^(?:WRITE (.+?): ?(.*)|RUN (.+))$", re.MULTILINE)
SAY = re.compile(r"^SAY (.*)$", re.MULTILINE)


def directive_reply(body: dict[str, Any], final_text: str | None = None) -> Text | ToolUse:
    """Answer from lines in the task text: `WRITE <path>: <content>`, `RUN <command>` and
    `SAY <text>`.

    Each WRITE becomes one call of the CLI's `Write` tool and each RUN one of its `Bash` tool, in
    order, one per request; then the final text is the SAY lines, else `final_text`, else
    `done: <first line of the task>`. The count of calls already made is read from the
    conversation, so the fake holds no state.
    """
    prompt = last_user_text(body)
    steps = STEP.findall(prompt)
    made = sum(1 for m in body.get("messages", [])[_prompt_index(body) + 1:]
               if m.get("role") == "assistant" and isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_use")
    if made < len(steps):
        path, content, command = steps[made]
        if command:
            _require_write_tool(body, "Bash", frozenset({"command"}))
            return ToolUse("Bash", {"command": command, "description": "run a command"})
        _require_write_tool(body)
        absolute = path if path.startswith("/") else f"{working_directory(body)}/{path}"
        # Content is one line in the directive; a file conventionally ends with a newline.
        return ToolUse("Write", {"file_path": absolute, "content": content + "\n"})
    says = SAY.findall(prompt)
    if says:
        return Text("\n".join(says))
    if final_text is not None:
        return Text(final_text)
    return Text("done: " + (prompt.strip().splitlines() or [""])[0])


def stream_events(reply: Text | ToolUse, model: str, input_tokens: int,
                  output_tokens: int) -> list[dict[str, Any]]:
    """The SSE events of one streamed message, as the real API sends them."""
    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if reply.text:
        blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": reply.text}))
    stop_reason = "end_turn"
    if isinstance(reply, ToolUse):
        stop_reason = "tool_use"
        start = {"type": "tool_use", "id": f"toolu_fake_{uuid.uuid4().hex[:20]}",
                 "name": reply.name, "input": {}}
        blocks.append((start, {"type": "input_json_delta",
                               "partial_json": json.dumps(reply.input)}))
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        "id": f"msg_fake_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}]
    for index, (start, delta) in enumerate(blocks):
        events += [{"type": "content_block_start", "index": index, "content_block": start},
                   {"type": "content_block_delta", "index": index, "delta": delta},
                   {"type": "content_block_stop", "index": index}]
    events += [{"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens}},
               {"type": "message_stop"}]
    return events


class FakeApi(LoopbackServer):
    """The server. Use as a context manager, or `start()` and `stop()`.

    `script(reply, model=...)` queues replies; a queued reply answers the first Messages request
    whose model id contains `model` (any model when None), and scripted replies win over the
    directives. `final_text` is the final text when the task has no SAY line.
    """

    def __init__(self, input_tokens: int = 100, output_tokens: int = 20,
                 final_text: str | None = None) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.final_text = final_text
        # The Messages requests answered with a reply (and so with tokens the CLI bills).
        self.billed: list[Request] = []
        super().__init__(_handler_for)

    @property
    def url(self) -> str:
        """The base URL for `ANTHROPIC_BASE_URL`."""
        return f"http://127.0.0.1:{self._server.server_port}"

    def requests_for_messages(self) -> list[Request]:
        """The Messages API calls so far."""
        return [r for r in self.requests if r.is_messages]

    def unexpected(self) -> list[Request]:
        """Requests for anything but the Messages API (the fake answered them 404)."""
        return [r for r in self.requests if not r.is_messages and not _is_count_tokens(r)]

    def _reply_for(self, request: Request) -> Text | ToolUse | HttpError | Hang:
        reply = self._scripted(request.model)
        if reply is None or isinstance(reply, Directed):
            return directive_reply(request.body, self.final_text)
        return cast("Text | ToolUse | HttpError | Hang", reply)


def _is_count_tokens(request: Request) -> bool:
    return request.posted_to("/v1/messages/count_tokens")


def _handler_for(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(RecordingHandler):
        def _error(self, status: int, error_type: str, message: str,
                   headers: dict[str, str] | None = None) -> None:
            body = {"type": "error", "error": {"type": error_type, "message": message}}
            self._send(status, "application/json", json.dumps(body).encode(), headers)

        def _handle(self) -> None:
            request = self._received(api, Request)
            body = request.body
            if _is_count_tokens(request):
                self._send(200, "application/json",
                           json.dumps({"input_tokens": api.input_tokens}).encode())
            elif not request.is_messages or not isinstance(body, dict):
                self._error(404, "not_found_error", f"fake API: no {self.command} {self.path}")
            else:
                self._answer(request)

        def _answer(self, request: Request) -> None:
            try:
                reply = api._reply_for(request)
            except ValueError as exc:  # a directive the request cannot serve: say so loudly
                self._error(400, "invalid_request_error", f"fake API: {exc}",
                            {"x-should-retry": "false"})
                return
            if isinstance(reply, Hang):
                self._hang(api)
            elif isinstance(reply, HttpError):
                self._error(reply.status, reply.error_type, reply.message, reply.headers)
            else:
                events = stream_events(reply, request.model or "claude-fake", api.input_tokens,
                                       api.output_tokens)
                self._send(200, "text/event-stream", sse(events), {"cache-control": "no-cache"})
                with api._lock:
                    api.billed.append(request)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

    return Handler
