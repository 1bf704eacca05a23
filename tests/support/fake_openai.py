"""A fake OpenAI Responses API on 127.0.0.1, enough for the real Codex CLI to run a task.

It records every request and answers `POST /v1/responses` with a streamed (SSE) response. What it
answers comes from a queue of scripted replies, else from directives in the task text
(`directive_reply`), so an end-to-end test can be written as plain prompt lines. What the real
binary sends and expects is in tests/codex-cli/NOTES.md.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Union, cast

from tests.support import loopback
from tests.support.loopback import Directed, Hang, LoopbackServer, RecordingHandler, sse

# The tool names Codex 0.169.0 declares (measured): a shell command and a patch.
SHELL_TOOL = "exec_command"
PATCH_TOOL = "apply_patch"


@dataclass(frozen=True)
class Message:
    """A final assistant message: the turn ends."""

    text: str


@dataclass(frozen=True)
class Shell:
    """A call of the `exec_command` function tool: Codex runs `cmd` with bash in its cwd."""

    cmd: str
    text: str = ""   # an optional message before the call


@dataclass(frozen=True)
class Patch:
    """A call of the freeform `apply_patch` tool; `patch` is the whole `*** Begin Patch` text."""

    patch: str
    text: str = ""


@dataclass(frozen=True)
class HttpError:
    """An HTTP error with an OpenAI-style JSON body (`{"error": {...}}`) and extra headers."""

    status: int
    error: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


Reply = Union[Message, Shell, Patch, HttpError, Hang, Directed]


def add_file(path: str, content: str) -> str:
    """An apply_patch text that creates `path` (relative to Codex's cwd) holding `content`."""
    lines = content.splitlines() or [""]
    body = "".join(f"+{line}\n" for line in lines)
    return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch"


def server_error() -> HttpError:
    """A 500, which Codex retries (request_max_retries) and then reports."""
    return HttpError(500, {"type": "server_error", "message": "Internal server error (fake)"})


def unauthorized() -> HttpError:
    """A 401 for a bad API key."""
    return HttpError(401, {"type": "invalid_request_error", "code": "invalid_api_key",
                           "message": "Incorrect API key provided: sk-fake (fake)"})


def rate_limited(retry_after: int | None = None) -> HttpError:
    """A plain 429 (no usage limit in its body)."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return HttpError(429, {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
                           "message": "Rate limit reached for requests (fake)"}, headers)


def usage_limit(resets_at: int | None = None, plan: str = "pro") -> HttpError:
    """A ChatGPT plan's usage limit, the 429 body Codex reads (`usage_limit_reached` with
    `resets_at` in unix seconds, and the `x-codex-primary-*` rate-limit headers)."""
    error: dict[str, Any] = {"type": "usage_limit_reached", "plan_type": plan,
                             "message": "The usage limit has been reached (fake)"}
    headers = {"x-codex-primary-used-percent": "100", "x-codex-primary-window-minutes": "300"}
    if resets_at is not None:
        error["resets_at"] = resets_at
        error["resets_in_seconds"] = max(0, int(resets_at - time.time()))
        headers["x-codex-primary-reset-at"] = str(resets_at)
        headers["x-codex-primary-reset-after-seconds"] = str(error["resets_in_seconds"])
    return HttpError(429, error, headers)


class Request(loopback.Request):
    """One Responses API request as the fake received it."""

    @property
    def is_responses(self) -> bool:
        """Whether this is a Responses API call."""
        return self.posted_to("/v1/responses")

    @property
    def tools(self) -> dict[str, dict[str, Any]]:
        """The declared tools by name."""
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        return {t["name"]: t for t in tools if isinstance(t, dict) and "name" in t}


def _texts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [c.get("text", "") for c in content or [] if isinstance(c, dict)]


def _is_context(text: str) -> bool:
    """Codex's own user-role additions: `<environment_context>` and AGENTS.md blocks."""
    stripped = text.lstrip()
    return stripped.startswith("<") or stripped.startswith("# AGENTS.md instructions")


def _prompt_index(body: dict[str, Any]) -> int:
    """Index of the last user message holding a prompt (not only Codex's context blocks)."""
    items = body.get("input", [])
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        if item.get("type") == "message" and item.get("role") == "user" and any(
                not _is_context(t) for t in _texts(item)):
            return i
    return -1


def last_user_text(body: dict[str, Any]) -> str:
    """The prompt of the latest turn, without Codex's context blocks."""
    i = _prompt_index(body)
    if i < 0:
        return ""
    return "\n".join(t for t in _texts(body["input"][i]) if not _is_context(t))


def developer_text(body: dict[str, Any]) -> str:
    """Every developer-role text (Codex's instructions, then `developer_instructions`)."""
    return "\n".join(t for item in body.get("input", [])
                     if item.get("role") == "developer" for t in _texts(item))


def tool_outputs(body: dict[str, Any]) -> list[str]:
    """The outputs Codex sent back for tool calls, in order."""
    kinds = ("function_call_output", "custom_tool_call_output")
    outputs = []
    for item in body.get("input", []):
        if item.get("type") in kinds:
            out = item.get("output")
            outputs.append(out if isinstance(out, str) else json.dumps(out))
    return outputs


WRITE = re.compile(r"^WRITE (.+?): ?(.*)$", re.MULTILINE)
RUN = re.compile(r"^RUN (.+)$", re.MULTILINE)
SAY = re.compile(r"^SAY (.*)$", re.MULTILINE)


def directive_reply(body: dict[str, Any], final_text: str | None = None) -> Reply:
    """Answer from lines in the task text: `WRITE <path>: <content>` (an apply_patch adding the
    file), `RUN <command>` (an exec_command) and `SAY <text>`.

    Calls go one per request, WRITEs first, then RUNs; then the final message is the SAY lines,
    else `final_text`, else `done: <first line of the task>`. The count of calls already made is
    read from the conversation, so the fake holds no state.
    """
    prompt = last_user_text(body)
    calls: list[Reply] = [Patch(add_file(path, content)) for path, content in WRITE.findall(prompt)]
    calls += [Shell(cmd) for cmd in RUN.findall(prompt)]
    made = sum(1 for item in body.get("input", [])[_prompt_index(body) + 1:]
               if item.get("type") in ("function_call", "custom_tool_call"))
    if made < len(calls):
        return calls[made]
    says = SAY.findall(prompt)
    if says:
        return Message("\n".join(says))
    if final_text is not None:
        return Message(final_text)
    return Message("done: " + (prompt.strip().splitlines() or [""])[0])


def _items(reply: Message | Shell | Patch) -> list[dict[str, Any]]:
    """The output items of one response."""
    items: list[dict[str, Any]] = []
    text = reply.text
    if text:
        items.append({"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}",
                      "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]})
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    if isinstance(reply, Shell):
        items.append({"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}",
                      "status": "completed", "name": SHELL_TOOL, "call_id": call_id,
                      "arguments": json.dumps({"cmd": reply.cmd})})
    elif isinstance(reply, Patch):
        items.append({"type": "custom_tool_call", "id": f"ctc_{uuid.uuid4().hex[:24]}",
                      "status": "completed", "name": PATCH_TOOL, "call_id": call_id,
                      "input": reply.patch})
    return items


def stream_events(reply: Message | Shell | Patch, model: str, input_tokens: int,
                  output_tokens: int, cached_tokens: int = 0) -> list[dict[str, Any]]:
    """The SSE events of one streamed response, as the real API sends them."""
    response_id = f"resp_{uuid.uuid4().hex[:24]}"
    shell = {"id": response_id, "object": "response", "model": model, "status": "in_progress",
             "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": shell}]
    items = _items(reply)
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, "status": "in_progress",
                                **({"content": []} if item["type"] == "message" else {})}})
        if item["type"] == "message":
            events.append({"type": "response.output_text.delta", "output_index": index,
                           "content_index": 0, "item_id": item["id"],
                           "delta": item["content"][0]["text"]})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": item})
    usage = {"input_tokens": input_tokens,
             "input_tokens_details": {"cached_tokens": cached_tokens},
             "output_tokens": output_tokens,
             "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": input_tokens + output_tokens}
    events.append({"type": "response.completed",
                   "response": {**shell, "status": "completed", "output": items,
                                "usage": usage}})
    return events


class FakeOpenAI(LoopbackServer):
    """The server. Use as a context manager, or `start()` and `stop()`.

    `script(reply, ..., model=...)` queues replies, answered in order by the requests for that
    model; scripted replies win over the directives. `final_text` is the final message when the
    task has no SAY line.
    """

    def __init__(self, input_tokens: int = 100, output_tokens: int = 20, cached_tokens: int = 0,
                 final_text: str | None = None) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cached_tokens = cached_tokens
        self.final_text = final_text
        super().__init__(_handler_for)

    @property
    def url(self) -> str:
        """The base URL for a model provider's `base_url` (ends in /v1)."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def responses_requests(self) -> list[Request]:
        """The Responses API calls so far."""
        return [r for r in self.requests if r.is_responses]

    def unexpected(self) -> list[Request]:
        """Requests for anything but the Responses API (answered 404)."""
        return [r for r in self.requests if not r.is_responses]

    def _reply_for(self, request: Request) -> Reply:
        reply = self._scripted(request.model)
        if reply is None or isinstance(reply, Directed):
            return directive_reply(request.body, self.final_text)
        return cast(Reply, reply)


def _handler_for(api: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(RecordingHandler):
        request_id_header = "x-request-id"

        def _handle(self) -> None:
            request = self._received(api, Request)
            body = request.body
            if not request.is_responses or not isinstance(body, dict):
                error = {"type": "invalid_request_error",
                         "message": f"fake API: no {self.command} {self.path}"}
                self._send(404, "application/json", json.dumps({"error": error}).encode())
                return
            reply = api._reply_for(request)
            if isinstance(reply, Hang):
                self._hang(api)
            elif isinstance(reply, HttpError):
                self._send(reply.status, "application/json",
                           json.dumps({"error": reply.error}).encode(), reply.headers)
            elif isinstance(reply, (Message, Shell, Patch)):
                events = stream_events(reply, request.model or "gpt-fake", api.input_tokens,
                                       api.output_tokens, api.cached_tokens)
                self._send(200, "text/event-stream", sse(events), {"cache-control": "no-cache"})

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

    return Handler
