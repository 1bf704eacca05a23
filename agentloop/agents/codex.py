"""The OpenAI Codex CLI adapter: `codex exec --json`, its runs and helper calls, its errors.

Facts this relies on were measured on codex-cli 0.169.0 (tests/codex-cli/NOTES.md) and are
re-checked by the tests against a fake Responses API (tests/support/fake_openai.py):

- `codex exec` reads the prompt from standard input when the prompt argument is `-`;
  `codex exec resume <thread id> -` continues a thread in a new process.
- The loop's rules go in as `-c developer_instructions=<TOML string>`: Codex sends them as a
  developer message after its own instructions, which it keeps (they teach its tools).
- Developer runs: `--dangerously-bypass-approvals-and-sandbox` (no sandbox, never asks), since the
  loop isolates every task's changes in their own change itself; `resume` takes no `-s`, so the
  same flag serves both. The reviewer: `-s read-only` with approvals `never`, always a fresh
  thread; a write is refused by the sandbox (tests/agents/test_codex.py proves it).
- Codex reports tokens, never dollars: results say `cost_known=False` and cost 0, and the run
  prices them from agents.prices.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import orjson

from agentloop.agents import (
    LOOP_RULES,
    REVIEW_RULES,
    Activity,
    AgentResult,
    AgentRun,
    Answer,
    Failure,
    Models,
    clean,
)
from agentloop.agents.codex_errors import classify
from agentloop.agents.codex_stream import CodexLog, error_line, judge
from agentloop.agents.common import (
    LogFiles,
    display,
    helper_call,
    in_memory,
    log_footer,
    log_header,
    read_back,
    stream_run,
)
from agentloop.errors import ProgramNotFound
from agentloop.proc.environ import home_of

if TYPE_CHECKING:  # a run without --sandbox never loads the sandbox
    from agentloop.sandbox import Kept, Sandbox

ENV_VAR = "AGENT_LOOP_CODEX"
# Codex 0.169.0's own default model for coding (its catalogue: "Latest workhorse model for
# coding and everyday work") for tasks and reviews; its small one ("Fast and affordable model for
# easier tasks") for the short helper calls, as Claude's adapter uses haiku there.
MODELS = Models(task="gpt-6.1-sol", review="gpt-6.1-sol", helper="gpt-6-luna")
INSTALL = "npm install -g @openai/codex"

COMMON = ("--json", "--skip-git-repo-check")
FULL_ACCESS = ("--dangerously-bypass-approvals-and-sandbox",)
# Read-only sandbox, and nothing outside it is ever granted (exec cannot ask anyway).
READ_ONLY = ("-s", "read-only", "-c", 'approval_policy="never"')


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, for a `-c key=value` override.

    JSON's escapes (\\n, \\", \\\\, \\uXXXX) are TOML's too; non-ASCII stays as it is (a
    character beyond U+FFFF would need TOML's \\U form), and DEL, which JSON leaves bare but
    TOML forbids, is escaped.
    """
    return json.dumps(clean(text), ensure_ascii=False).replace("\x7f", "\\u007f")


def _answer_from(stdout: str) -> tuple[str, str | None]:
    """The last agent message of a JSONL run, and its failure, if any."""
    text, failure = "", None
    for line in stdout.splitlines():
        try:
            event: Any = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        item = event.get("item")
        if event.get("type") == "item.completed" and isinstance(item, dict) \
                and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
            text = item["text"]
        elif event.get("type") == "turn.failed":
            error = event.get("error")
            failure = display(error.get("message") if isinstance(error, dict) else error, 300)
    return text, failure


def homes(env: Mapping[str, str] | None) -> tuple[Path, ...]:
    """The folder the CLI writes besides the working copy: CODEX_HOME, else ~/.codex
    (configuration, sessions, logs)."""
    environ = dict(os.environ if env is None else env)
    return (Path(environ.get("CODEX_HOME") or home_of(environ) / ".codex"),)


# What the user's own codex, outside any sandbox, reads from CODEX_HOME as configuration (a
# `notify` program, MCP servers, hooks: run as the user), instructions, rules, prompts, skills
# and subagents: read-only in the sandbox, made when missing (empty files and folders; the CLI
# starts and resumes with them, tests/sandbox/test_agent_homes.py).
KEPT: dict[str, str | None] = {
    "config.toml": "", "AGENTS.md": "", "AGENTS.override.md": "", "hooks.json": "{}\n",
    "hooks": None, "rules": None, "prompts": None, "skills": None, "agents": None}


def kept(env: Mapping[str, str] | None) -> tuple[Kept, ...]:
    """The paths of CODEX_HOME the CLI must not write in the sandbox."""
    folder = homes(env)[0]
    return tuple((folder / name, text) for name, text in KEPT.items())


class CodexAgent:
    """Runs `codex exec --json`, one process per run."""

    name = "codex"
    models = MODELS
    caps_spend = False  # codex exec has no spending cap
    own_sandbox = ("Codex's own: off for tasks (--dangerously-bypass-approvals-and-sandbox), "
                   "read-only for the reviewer and helper calls")
    reports_cost = False  # tokens only: agents.prices prices them

    def __init__(self, program: str | None = None, env: Mapping[str, str] | None = None,
                 sandbox: Sandbox | None = None) -> None:
        given = program or (env or os.environ).get(ENV_VAR) or "codex"
        # Resolved now, against the user's cwd: the agent itself runs from the project root.
        self.program = shutil.which(given) or given
        self.env = env
        self.sandbox = sandbox

    def check(self) -> None:
        """Fail early, in one line, when the codex program is missing."""
        if shutil.which(self.program) is None:
            raise ProgramNotFound(f"codex not found ({self.program}): install the Codex CLI "
                                  f"({INSTALL}) or point --agent-program / ${ENV_VAR} at it")

    def classify(self, result: AgentResult, now: datetime) -> Failure:
        """Codex's error messages, read by agentloop.agents.codex_errors."""
        return classify(result, now)

    def argv(self, request: AgentRun) -> list[str]:
        """The command line for one run; the prompt goes on standard input (`-`)."""
        if request.read_only:
            if request.resume:
                raise ValueError("a read-only run is always a fresh session")
            return [self.program, "exec", *COMMON, *READ_ONLY, "-m", request.model,
                    "-c", "developer_instructions=" + toml_string(REVIEW_RULES), "-"]
        rules = ("-c", "developer_instructions=" + toml_string(LOOP_RULES))
        if request.resume:
            # After `--` a thread id is never read as an option.
            return [self.program, "exec", "resume", *COMMON, *FULL_ACCESS, "-m", request.model,
                    *rules, "--", request.resume, "-"]
        return [self.program, "exec", *COMMON, *FULL_ACCESS, "-m", request.model, *rules, "-"]

    def run(self, request: AgentRun, on_activity: Callable[[Activity], None]) -> AgentResult:
        """Run once, streaming into the logs, and judge the result."""
        argv = self.argv(request)
        with LogFiles(request.log, request.raw_log) as files:
            log = CodexLog(files, on_activity, self._header(request, argv))
            start = time.monotonic()
            done = stream_run(log, self.sandbox, argv, request, self.env, homes(self.env),
                              clean(request.prompt).encode("utf-8"), kept(self.env))
            result = replace(judge(done.returncode, done.timed_out, log, done.stderr_tail,
                                   request, time.monotonic() - start), paused=done.paused)
            log.write(self._footer(result, done.stderr_tail))
        return result

    def read_back(self, request: AgentRun) -> AgentResult | None:
        """The run's result from its raw log, when that holds a completed turn and no failure
        (agents.ReadsBack); its exit code, known no more, is taken as 0."""
        log = CodexLog(in_memory(), lambda _: None)
        if not read_back(log, request.raw_log):
            return None
        result = judge(0, False, log, "", request, 0.0)
        return result if result.ok else None

    def ask(self, prompt: str, model: str, cwd: Path, timeout: float = 180) -> Answer:
        """A fresh read-only call that keeps no session (`--ephemeral`): the retry advisor,
        commit messages. Never raises for its own problems; Ctrl+C goes through."""
        argv = [self.program, "exec", *COMMON, "--ephemeral", *READ_ONLY, "-m", model, "-"]
        done = helper_call(self.sandbox, argv, clean(prompt), cwd, self.env, timeout,
                           homes(self.env), kept(self.env))
        if isinstance(done, Answer):
            return done
        text, failure = _answer_from(done.stdout)
        if failure or done.returncode != 0:
            why = failure or display(error_line(done.stderr), 300)
            return Answer(text, 0.0, f"exit {done.returncode}: {why}")
        if not text:
            return Answer("", 0.0, "codex gave no answer")
        return Answer(text, 0.0, None)

    def _header(self, request: AgentRun, argv: list[str]) -> str:
        notes = (["task budget: not enforced during the run (codex has no spending cap); its "
                  "cost is priced from its tokens after it"]
                 if request.budget_usd is not None else [])
        return log_header(request, argv, notes)

    def _footer(self, r: AgentResult, stderr: str) -> str:
        return log_footer(r, "not reported (codex reports tokens; agent-loop prices them)",
                          stderr)
