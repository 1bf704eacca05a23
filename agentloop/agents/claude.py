"""The Claude Code CLI adapter: argv building, and reading its stream-json output into a log.

Facts this relies on were measured on the real CLI 2.1.330 (shared/claude-cli/FACTS.md) and are
re-checked by tests/test_claude_real.py against a fake Messages API.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Mapping

import orjson

from agentloop import proc
from agentloop.agents import AgentResult, AgentRun
from agentloop.errors import AgentBlocked, ProcessError, ProgramNotFound

ENV_VAR = "AGENT_LOOP_CLAUDE"

# Appended to Claude Code's own system prompt rather than replacing it (--system-prompt would):
# the built-in prompt carries the tool instructions and environment details the agent needs to
# edit files well; we only add the loop's rules on top.
SYSTEM_PROMPT = """\
You are working through a task list inside agent-loop, unattended. Nobody will answer questions.
- Work autonomously: use every tool you need, decide for yourself, and finish the task.
- Do not ask questions; when something is unclear, make the sensible choice and say so.
- Do not commit, branch, stash or otherwise touch version control: agent-loop puts your changes
  into their own change (jj or git) after you finish.
- End your final message with two short sections, each a few lines at most:
  Progress: what is done and what is left of this task.
  Learnings: facts about this project worth knowing for later tasks (commands, layout,
  pitfalls); write "none" when there are none.
- After them, on a line of its own, you may end with one signal:
  TASK_COMPLETE            the task is fully done (when asked to say so);
  TASK_BLOCKED: <reason>   you cannot do this task without a human (missing access, a decision);
  AGENT_LOOP_ERROR: <reason>  something is so wrong that the whole run must stop."""

# The reviewer's rules; the verdict format itself is in its prompt (agentloop/verdict.py).
REVIEW_SYSTEM_PROMPT = """\
You are the reviewer inside agent-loop, which has a coding agent work through a task list
unattended. Nobody will answer questions. You can read and search the project's files; you
cannot change them, and you must not try. Judge the change you are shown and end with the
verdict line your prompt asks for."""

# The reviewer may read the project but never change it. Two guards keep it so, each enough on
# its own (measured on 2.1.330): `--tools` offers the model Read, Grep and Glob only, and
# `--disallowedTools` denies the tools that write by name, whatever the project's settings say.
# A permission mode alone is not enough: a trusted project whose .claude/settings.json allows
# Write, Edit and Bash let them through under `--permission-mode dontAsk`
# (tests/test_review_real.py shows both). Besides: nothing that is not pre-approved is ever asked
# for (-p mode would deny it anyway), and no MCP servers from the project's .mcp.json (their tools
# could write). No --dangerously-skip-permissions, so the reviewer also runs as root.
READ_ONLY_FLAGS = ("--tools", "Read,Grep,Glob", "--disallowedTools",
                   "Write,Edit,NotebookEdit,Bash", "--permission-mode", "dontAsk",
                   "--strict-mcp-config")

ROOT_REFUSAL = "cannot be used with root/sudo privileges"
ROOT_ADVICE = ("claude refuses --dangerously-skip-permissions when run as root; run agent-loop as "
               "a normal user, or set IS_SANDBOX=1 if this machine is a disposable sandbox")


def _display(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_tool(name: str, args: dict[str, Any]) -> str:
    """One short line for a tool call: the tool and its main argument."""
    for key in ("file_path", "command", "path", "pattern", "url", "query", "description", "prompt"):
        if key in args:
            return f"{name} {_display(args[key], 120)}"
    return name


_OBJECT_START = re.compile(rb"[ \t]*\{")


class StreamLog:
    """Turns stream-json lines into a readable log and remembers what matters for the result."""

    def __init__(self, readable: IO[str], raw: IO[bytes], on_activity: Callable[[str], None]) -> None:
        self.readable = readable
        self.raw = raw
        self.on_activity = on_activity
        self.session_id: str | None = None
        self.result: dict[str, Any] | None = None
        self.garbage = 0
        self.rate_limit: dict[str, Any] | None = None
        self.model: str | None = None

    def write(self, text: str) -> None:
        """Add lines to the readable log and flush, so `tail -f` follows along."""
        self.readable.write(text.rstrip("\n") + "\n")
        self.readable.flush()

    def feed(self, line: bytes) -> None:
        """Handle one line of the agent's stdout."""
        self.raw.write(line)  # in two writes: a copy of a long line would double its memory
        if not line.endswith(b"\n"):
            self.raw.write(b"\n")
        self.raw.flush()
        if not line.strip():
            return
        event = None
        # Only what can be an object is parsed: a failed parse keeps a copy of the whole line.
        if _OBJECT_START.match(line) and line.rstrip(b"\r\n").endswith(b"}"):
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
        if not isinstance(event, dict):
            self.garbage += 1
            # Only the start is shown: a line can be megabytes (proc.MAX_LINE_BYTES) of anything.
            self.write(f"[not JSON] {_display(line[:1200].decode('utf-8', 'replace'), 300)}")
            return
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
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str) and text.strip():
                self.write(text)
                self.on_activity(_display(text, 80))
            elif block.get("type") == "tool_use":
                line = describe_tool(str(block.get("name")), _dict(block.get("input")))
                self.write(f"→ {line}")
                self.on_activity(line)

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
                self.write(f"  {mark} {_display(body or '', 200)}")


# The CLI's output is read as untrusted: a field of an unexpected type counts as absent, so
# nothing downstream (the state, the console, a --resume argument) ever holds a stray type.
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


def judge(exit_code: int, timed_out: bool, log: StreamLog, stderr: str) -> AgentResult:
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
        error = _display(res.get("result") or listed or stderr_line or f"exit {exit_code}", 300)
        if exit_code != 0 and not res.get("is_error"):
            error = f"exit {exit_code}: {error}"
    cost = res.get("total_cost_usd")
    denials = res.get("permission_denials")
    status = res.get("api_error_status")
    api_error, api_error_type = res.get("api_error"), res.get("api_error_type")
    resets = _num((log.rate_limit or {}).get("resetsAt"))
    return AgentResult(
        ok=error is None, exit_code=exit_code, session_id=log.session_id,
        text=str(res.get("result") or ""), error=error,
        cost_usd=_num(cost) or 0.0,
        usage=_usage(res.get("usage")), num_turns=_int(res.get("num_turns")),
        duration_ms=_int(res.get("duration_ms")),
        permission_denials=len(denials) if isinstance(denials, list) else 0,
        api_error_status=_int(status),
        api_error=str(api_error) if api_error else None,
        api_error_type=str(api_error_type) if api_error_type else None,
        limit_resets_at=resets,
        stderr=stderr[-2000:], timed_out=timed_out, model=log.model,
        subtype=str(res["subtype"]) if res.get("subtype") else None)


def _stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Answer:
    """What a one-off, tool-less Claude call said."""

    text: str
    cost_usd: float = 0.0
    error: str | None = None     # why the call failed, or None
    usage: dict[str, int] = field(default_factory=dict)


def ask(program: str, model: str, prompt: str, cwd: Path, env: Mapping[str, str] | None = None,
        timeout: float = 180) -> Answer:
    """A fresh, lightweight Claude call: no tools, no resume, no session kept; JSON output.

    Never raises for the call's own problems (they are in `error`); Ctrl+C goes through.
    """
    argv = [program, "-p", "--output-format", "json", "--model", model, "--tools", "",
            "--no-session-persistence", "--", prompt]
    try:
        done = proc.run(argv, cwd=cwd, env=env, check=False, timeout=timeout, guarded=True)
    except ProgramNotFound:
        return Answer("", error=f"{program} not found")
    except ProcessError as exc:  # a timeout, or a program that cannot start
        if isinstance(exc.__cause__, subprocess.TimeoutExpired):
            return Answer("", error=f"timed out after {timeout}s")  # (str(exc) holds the prompt)
        return Answer("", error=str(exc).splitlines()[0][:300])
    except OSError as exc:  # argv too long, ...
        return Answer("", error=f"could not start {program}: {exc}")
    try:
        answer = orjson.loads(done.stdout)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        stderr = " ".join(done.stderr.split())
        return Answer("", error=f"no JSON result (exit {done.returncode})"
                      + (f": {stderr[:300]}" if stderr else ""))
    raw_cost, raw_text = answer.get("total_cost_usd"), answer.get("result")
    cost = float(raw_cost) if isinstance(raw_cost, (int, float)) else 0.0
    text = raw_text if isinstance(raw_text, str) else ""
    if done.returncode != 0 or answer.get("is_error"):
        return Answer(text, cost, f"exit {done.returncode}: {_display(text, 300)}",
                      _usage(answer.get("usage")))
    return Answer(text, cost, None, _usage(answer.get("usage")))


class ClaudeAgent:
    """Runs `claude -p` with stream-json output, one process per task attempt."""

    name = "claude"

    def __init__(self, program: str | None = None, env: dict[str, str] | None = None) -> None:
        given = program or os.environ.get(ENV_VAR) or "claude"
        # Resolved now, against the user's cwd: the agent itself runs from the project root.
        self.program = shutil.which(given) or given
        self.env = env

    def check(self) -> None:
        """Fail early, in one line, when the claude program is missing or will refuse to run."""
        if shutil.which(self.program) is None:
            raise ProgramNotFound(f"claude not found ({self.program}): install Claude Code "
                                  f"(npm install -g @anthropic-ai/claude-code) or point "
                                  f"--claude / ${ENV_VAR} at it")
        env = self.env if self.env is not None else os.environ
        if os.geteuid() == 0 and env.get("IS_SANDBOX") != "1":
            raise AgentBlocked(ROOT_ADVICE)

    def argv(self, request: AgentRun) -> list[str]:
        """The command line for one run; the prompt is one argv element, never shell text."""
        if request.read_only:
            return self.reviewer_argv(request)
        argv = [self.program, "-p", "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--model", request.model,
                "--append-system-prompt", SYSTEM_PROMPT]
        if request.budget_usd is not None:
            argv += ["--max-budget-usd", f"{request.budget_usd:g}"]
        if request.resume:
            argv += ["--resume", request.resume]
        # "--" ends the options, so a task that starts with "-" is still the prompt.
        return argv + ["--", request.prompt]

    def reviewer_argv(self, request: AgentRun) -> list[str]:
        """A read-only run in a fresh session: the reviewer's rules and READ_ONLY_FLAGS."""
        if request.resume:
            raise ValueError("a read-only run is always a fresh session")
        argv = [self.program, "-p", "--output-format", "stream-json", "--verbose",
                "--model", request.model, "--append-system-prompt", REVIEW_SYSTEM_PROMPT,
                *READ_ONLY_FLAGS]
        if request.budget_usd is not None:
            argv += ["--max-budget-usd", f"{request.budget_usd:g}"]
        return argv + ["--", request.prompt]

    def run(self, request: AgentRun, on_activity: Callable[[str], None]) -> AgentResult:
        """Run one attempt, streaming into the logs, and judge its result."""
        argv = self.argv(request)
        request.log.parent.mkdir(parents=True, exist_ok=True)
        with open(request.log, "w", encoding="utf-8") as readable, open(request.raw_log, "wb") as raw:
            log = StreamLog(readable, raw, on_activity)
            log.write(self._header(request, argv))
            try:
                done = proc.stream(argv, log.feed, cwd=request.cwd, env=self.env,
                                   timeout=request.timeout)
            except BaseException:
                log.write(f"\n== stopped at {_stamp()}: interrupted ==")
                raise
            if ROOT_REFUSAL in done.stderr_tail:
                log.write(f"\n== refused: {done.stderr_tail.strip()} ==")
                raise AgentBlocked(ROOT_ADVICE)
            result = judge(done.returncode, done.timed_out, log, done.stderr_tail)
            log.write(self._footer(result, done.stderr_tail, request.resume is not None))
        return result

    def _header(self, request: AgentRun, argv: list[str]) -> str:
        shown = [a if len(a) < 80 else f"<{len(a)} chars>" for a in argv[:-1]] + ["<prompt>"]
        lines = [f"== agent-loop · {_stamp()} =="]
        lines += [f"{key}: {value}" for key, value in request.header]
        lines += [f"session: {'resuming ' + request.resume if request.resume else 'new'}",
                  f"command: {' '.join(shown)}", "", "-- prompt --", request.prompt.rstrip(),
                  "", "-- agent --"]
        return "\n".join(lines)

    def _footer(self, r: AgentResult, stderr: str, resumed: bool) -> str:
        tokens = ", ".join(f"{k.replace('_tokens', '').replace('_input', '')} {v}"
                           for k, v in r.usage.items())
        lines = ["", f"== finished at {_stamp()}: "
                 + ("success ==" if r.ok else f"FAILED: {r.error} ==")]
        if r.text:
            lines += ["-- result --", r.text.rstrip()]
        lines += [f"exit code: {r.exit_code}", f"session: {r.session_id}",
                  f"cost: ${r.cost_usd:.4f}" + (" (the session's total so far)" if resumed else ""),
                  f"tokens: {tokens or 'none reported'}",
                  f"turns: {r.num_turns}", f"duration: {r.duration_ms} ms"]
        if r.permission_denials:
            lines.append(f"permission denials: {r.permission_denials}")
        if stderr.strip():
            lines += ["-- stderr (last lines) --", stderr.rstrip()[-4000:]]
        return "\n".join(lines)
