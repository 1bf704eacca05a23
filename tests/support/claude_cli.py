"""Run the real Claude Code CLI against the fake API (tests/support/fakeapi.py): fixtures and
helpers.

Register with `pytest_plugins = ["tests.support.claude_cli"]`. The CLI is the pinned npm package in
tests/claude-cli; nothing here skips when it is missing, the test fails and says how to install it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pytest

from tests.support import clirun
from tests.support.fakeapi import FakeApi

CLI_DIR = Path(__file__).resolve().parents[1] / "claude-cli"
CLAUDE = CLI_DIR / "node_modules" / ".bin" / "claude"
CLAUDE_VERSION = json.loads((CLI_DIR / "package.json").read_text())[
    "dependencies"]["@anthropic-ai/claude-code"]
# 0 retries: one request per error, so error tests take half a second instead of ~3 minutes.
MAX_RETRIES = "0"
# Environment the CLI must not inherit: another login, endpoint, config dir or proxy could send
# traffic somewhere other than the fake.
_INHERITED_PREFIXES = ("ANTHROPIC_", "CLAUDE_")
_PROXIES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}


@pytest.fixture
def claude_bin() -> Path:
    """The pinned real CLI. Missing or broken fails the test: nothing skips."""
    install = "run `npm ci --prefix tests/claude-cli`"
    if not CLAUDE.exists():
        pytest.fail(f"the Claude Code CLI is not installed at {CLAUDE}: {install}")
    version = clirun.installed_version(CLAUDE)
    if not version.startswith(CLAUDE_VERSION + " "):
        pytest.fail(f"{CLAUDE} --version gave {version!r}, want {CLAUDE_VERSION}: {install}")
    return CLAUDE


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    """A started fake Messages API, stopped (and its hung requests released) after the test."""
    with FakeApi() as api:
        yield api


def claude_env(home: Path, api: FakeApi) -> dict[str, str]:
    """A whole environment for the CLI: the fake API, a fake key and `home` as a throwaway HOME.

    Tests change the returned dict to vary it (e.g. `CLAUDE_CODE_MAX_RETRIES`, or `oauth_login`).
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(_INHERITED_PREFIXES) and k.lower() not in _PROXIES}
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update({
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key",
        # Without it the CLI also probes Anthropic's own host.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Else it leaves claude-<uid>/ and cc-socks/ in the system temp folder.
        "CLAUDE_CODE_TMPDIR": str(tmp),
        # We run as root; without it --dangerously-skip-permissions is refused.
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_MAX_RETRIES": MAX_RETRIES,
    })
    return env


# Two tasks in one group, each writing a file of its own.
REAL_PLAN = "## G\n- WRITE one.txt: one\n- WRITE two.txt: two\n"


def real_project(tmp_path: Path, api: FakeApi, claude_bin: Path,
                 plan: str = REAL_PLAN) -> tuple[Path, dict[str, str]]:
    """A folder tmp_path/work with the plan, and the environment in which agent-loop drives the
    pinned Claude Code CLI against `api` (agent_loop_env)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text(plan)
    return work, agent_loop_env(tmp_path, api, claude_bin)


def agent_loop_env(tmp_path: Path, api: FakeApi, claude_bin: Path) -> dict[str, str]:
    """claude_env with its HOME in tmp_path/claude-home, and agent-loop pointed at the pinned CLI
    (AGENT_LOOP_CLAUDE): the environment of agent-loop runs that drive the real CLI."""
    env = claude_env(tmp_path / "claude-home", api)
    env["AGENT_LOOP_CLAUDE"] = str(claude_bin)
    return env


def oauth_login(env: dict[str, str]) -> dict[str, str]:
    """`env` logged in with a subscription token instead of an API key (usage limits need it)."""
    changed = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
    changed["CLAUDE_CODE_OAUTH_TOKEN"] = "fake-oauth-token"
    return changed


def claude_argv(claude: Path, prompt: str | None, model: str = "opus",
                append_system_prompt: str = "You are tested.",
                extra: Sequence[str] = ()) -> list[str]:
    """The argv agent-loop uses; the prompt goes after `--` (None: the caller sends it on stdin).

    After `--` a prompt starting with `-` is never read as an option (see NOTES.md).
    """
    argv = [str(claude), "-p", "--output-format", "stream-json", "--verbose",
            "--dangerously-skip-permissions", "--model", model,
            "--append-system-prompt", append_system_prompt, *extra]
    return argv if prompt is None else [*argv, "--", prompt]


class CliRun(clirun.CliRun):
    """One finished CLI run with its stream-json output."""

    @property
    def result(self) -> dict[str, Any]:
        """The final `result` line; fails the test when there is none."""
        results = self.of_type("result")
        if not results:
            pytest.fail(f"no result line (exit {self.returncode})\nstderr: {self.stderr}\n"
                        f"stdout: {self.stdout[-2000:]}")
        return results[-1]


class ClaudeTimedOut(AssertionError):
    """The CLI outlived its timeout and was stopped; `run` holds what it printed meanwhile."""

    def __init__(self, run: CliRun, timeout: float) -> None:
        super().__init__(f"claude timed out after {timeout}s\nstderr: {run.stderr}")
        self.run = run


def run_claude(argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None,
               timeout: float = 60, since: Callable[[], bool] | None = None) -> CliRun:
    """Run the CLI (never through a shell); past `timeout` (counted from when `since` first
    holds, clirun.run_cli), stop its process group and raise."""
    run, timed_out = clirun.run_cli(CliRun, argv, cwd, env, stdin, timeout, since)
    if timed_out:
        raise ClaudeTimedOut(run, timeout)
    return run
