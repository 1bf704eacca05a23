"""The Claude Code CLI adapter: its argv, its runs and helper calls, its errors.

Facts this relies on were measured on the real CLI 2.1.330 (tests/claude-cli/NOTES.md) and are
re-checked by the tests against a fake Messages API (tests/support/fakeapi.py). The prompt goes on
standard input, never in argv: `claude -p` reads it from there when no prompt argument is given
(measured: 300 KB arrived whole), so a prompt of any size reaches the agent byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

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
)
from agentloop.agents.claude_stream import ROOT_REFUSAL, StreamLog, judge
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
from agentloop.errors import AgentBlocked, ProgramNotFound
from agentloop.proc.environ import home_of
from agentloop.proc.program_path import which

if TYPE_CHECKING:  # a run without --sandbox never loads the sandbox
    from agentloop.sandbox import Kept, Sandbox

ENV_VAR = "AGENT_LOOP_CLAUDE"
MODELS = Models(task="opus", review="sonnet", helper="haiku")

# Appended to Claude Code's own system prompt rather than replacing it (--system-prompt would):
# the built-in prompt carries the tool instructions and environment details the agent needs to
# edit files well; we only add the loop's rules on top.
SYSTEM_PROMPT = LOOP_RULES
REVIEW_SYSTEM_PROMPT = REVIEW_RULES

# The reviewer may read the project but never change it. Two guards keep it so, each enough on
# its own (measured on 2.1.330): `--tools` offers the model Read, Grep and Glob only, and
# `--disallowedTools` denies the tools that write by name, whatever the project's settings say.
# A permission mode alone is not enough: a trusted project whose .claude/settings.json allows
# Write, Edit and Bash let them through under `--permission-mode dontAsk`
# (tests/run/test_review_real.py shows both). Besides: nothing that is not pre-approved is ever
# asked for (-p mode would deny it anyway), and no MCP servers from the project's .mcp.json (their
# tools could write). No --dangerously-skip-permissions, so the reviewer also runs as root.
READ_ONLY_FLAGS = ("--tools", "Read,Grep,Glob", "--disallowedTools",
                   "Write,Edit,NotebookEdit,Bash", "--permission-mode", "dontAsk",
                   "--strict-mcp-config")

ROOT_ADVICE = ("claude refuses --dangerously-skip-permissions when run as root; run agent-loop as "
               "a normal user, or set IS_SANDBOX=1 if this machine is a disposable sandbox")


def homes(env: Mapping[str, str] | None) -> tuple[Path, ...]:
    """The folders the CLI writes besides the working copy: its configuration folder (where
    CLAUDE_CONFIG_DIR points, else ~/.claude: sessions, credentials, settings) and its temp
    folder when CLAUDE_CODE_TMPDIR moves it."""
    environ = dict(os.environ if env is None else env)
    found = [Path(environ.get("CLAUDE_CONFIG_DIR") or home_of(environ) / ".claude")]
    if environ.get("CLAUDE_CODE_TMPDIR"):
        found.append(Path(environ["CLAUDE_CODE_TMPDIR"]))
    return tuple(found)


# What the user's own claude, outside any sandbox, reads from its configuration folder as
# settings (hooks run as the user), instructions, subagents, commands and skills: read-only in
# the sandbox, made when missing (empty folders, a settings file of `{}`, an empty CLAUDE.md;
# the CLI starts and resumes with them, tests/sandbox/test_agent_homes.py).
KEPT: dict[str, str | None] = {
    "settings.json": "{}\n", "settings.local.json": "{}\n", "CLAUDE.md": "", "hooks": None,
    "agents": None, "commands": None, "skills": None, "output-styles": None,
    # Installed plugins: their hooks, commands and MCP servers run in the user's next session.
    "plugins": None}
# Its global configuration (`mcpServers`: commands it starts), in the configuration folder when
# CLAUDE_CONFIG_DIR moves it there (else ~/.claude.json, in the read-only home folder).
GLOBAL = ".claude.json"


def kept(env: Mapping[str, str] | None) -> tuple[Kept, ...]:
    """The paths of its configuration folder the CLI must not write in the sandbox."""
    folder = homes(env)[0]
    moved = (os.environ if env is None else env).get("CLAUDE_CONFIG_DIR")
    extra = ((folder / GLOBAL, "{}\n"),) if moved else ()
    return tuple((folder / name, text) for name, text in KEPT.items()) + extra


def ask(program: str, model: str, prompt: str, cwd: Path, env: Mapping[str, str] | None = None,
        timeout: float = 180, sandbox: Sandbox | None = None) -> Answer:
    """A fresh, lightweight Claude call: no tools, no resume, no session kept; JSON output.

    Never raises for the call's own problems (they are in `error`); Ctrl+C goes through.
    """
    argv = [program, "-p", "--output-format", "json", "--model", model, "--tools", "",
            "--no-session-persistence"]
    done = helper_call(sandbox, argv, prompt, cwd, env, timeout, homes(env), kept(env))
    if isinstance(done, Answer):
        return done
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
        return Answer(text, cost, f"exit {done.returncode}: {display(text, 300)}")
    return Answer(text, cost, None)


class ClaudeAgent:
    """Runs `claude -p` with stream-json output, one process per run."""

    name = "claude"
    models = MODELS
    caps_spend = True   # --max-budget-usd ends a run that reached it (error_max_budget_usd)
    # Claude Code's own sandbox wraps its Bash tool only, and --dangerously-skip-permissions
    # turns it off; the reviewer's guard is its tool list (READ_ONLY_FLAGS).
    own_sandbox = ("Claude Code's own: off for tasks (--dangerously-skip-permissions), the "
                   "reviewer held to Read, Grep and Glob, helper calls to no tools")
    reports_cost = True

    def __init__(self, program: str | None = None, env: Mapping[str, str] | None = None,
                 sandbox: Sandbox | None = None) -> None:
        given = program or os.environ.get(ENV_VAR) or "claude"
        # Resolved now, against the user's cwd: the agent itself runs from the project root.
        self.program = which(given) or given
        self.env = env
        self.sandbox = sandbox

    def check(self) -> None:
        """Fail early, in one line, when the claude program is missing or will refuse to run."""
        if which(self.program) is None:
            raise ProgramNotFound(f"claude not found ({self.program}): install Claude Code "
                                  f"(npm install -g @anthropic-ai/claude-code) or point "
                                  f"--agent-program / ${ENV_VAR} at it")
        env = self.env if self.env is not None else os.environ
        if os.geteuid() == 0 and env.get("IS_SANDBOX") != "1":
            raise AgentBlocked(ROOT_ADVICE)

    def classify(self, result: AgentResult, now: datetime) -> Failure:
        """Claude's error kinds, read by agentloop.agents.claude_errors (loaded here: only a
        failed run is classified)."""
        from agentloop.agents.claude_errors import classify

        return classify(result, now)

    def ask(self, prompt: str, model: str, cwd: Path, timeout: float = 180) -> Answer:
        """A tool-less call that keeps no session (the retry advisor, commit messages)."""
        return ask(self.program, model, prompt, cwd, self.env, timeout, self.sandbox)

    def argv(self, request: AgentRun) -> list[str]:
        """The command line for one run; the prompt goes on standard input."""
        if request.read_only:
            return self.reviewer_argv(request)
        argv = [self.program, "-p", "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--model", request.model,
                "--append-system-prompt", SYSTEM_PROMPT]
        if request.budget_usd is not None:
            argv += ["--max-budget-usd", f"{request.budget_usd:g}"]
        if request.resume:
            argv += ["--resume", request.resume]
        return argv

    def reviewer_argv(self, request: AgentRun) -> list[str]:
        """A read-only run in a fresh session: the reviewer's rules and READ_ONLY_FLAGS."""
        if request.resume:
            raise ValueError("a read-only run is always a fresh session")
        argv = [self.program, "-p", "--output-format", "stream-json", "--verbose",
                "--model", request.model, "--append-system-prompt", REVIEW_SYSTEM_PROMPT,
                *READ_ONLY_FLAGS]
        if request.budget_usd is not None:
            argv += ["--max-budget-usd", f"{request.budget_usd:g}"]
        return argv

    def run(self, request: AgentRun, on_activity: Callable[[Activity], None]) -> AgentResult:
        """Run once, streaming into the logs, and judge the result."""
        argv = self.argv(request)
        with LogFiles(request.log, request.raw_log) as files:
            log = StreamLog(files, on_activity, self._header(request, argv))
            done = stream_run(log, self.sandbox, argv, request, self.env, homes(self.env),
                              request.prompt.encode("utf-8", "replace"), kept(self.env))
            if ROOT_REFUSAL in done.stderr_tail:
                log.write(f"\n== refused: {done.stderr_tail.strip()} ==")
                raise AgentBlocked(ROOT_ADVICE)
            result = replace(judge(done.returncode, done.timed_out, log, done.stderr_tail,
                                   request), paused=done.paused)
            log.write(self._footer(result, done.stderr_tail, request.resume is not None))
        return result

    def read_back(self, request: AgentRun) -> AgentResult | None:
        """The run's result from its raw log, when that ends in a result line that says it
        ended well (agents.ReadsBack). Its exit code is known no more, and taken as 0: the result
        line is the CLI's last word, and one that is no error says the run succeeded."""
        log = StreamLog(in_memory(), lambda _: None)
        if not read_back(log, request.raw_log) or log.result is None:
            return None
        result = judge(0, False, log, "", request)
        return result if result.ok else None

    def _header(self, request: AgentRun, argv: list[str]) -> str:
        return log_header(request, argv)

    def _footer(self, r: AgentResult, stderr: str, resumed: bool) -> str:
        # total_cost_usd adds up over a resumed session: the log shows both.
        cost = f"${r.cost_usd:.4f}" + (f" (the session: ${r.totals.cost_usd:.4f})"
                                       if resumed else "")
        notes = [f"permission denials: {r.permission_denials}"] if r.permission_denials else []
        return log_footer(r, cost, stderr, notes)
