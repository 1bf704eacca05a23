"""Run the real Codex CLI against the fake Responses API (tests/support/fake_openai.py): fixtures
and helpers.

Register with `pytest_plugins = ["tests.support.codex_cli"]`. The CLI is the pinned npm package in
tests/codex-cli. A missing install skips the test on a developer's machine but fails it in CI
(`CI` set), so CI can never pass by skipping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.support import clirun
from tests.support.fake_openai import FakeOpenAI
from tests.support.repos import init_repo

CLI_DIR = Path(__file__).resolve().parents[1] / "codex-cli"
CODEX = CLI_DIR / "node_modules" / ".bin" / "codex"
CODEX_VERSION = json.loads((CLI_DIR / "package.json").read_text())[
    "dependencies"]["@openai/codex"]
STOP_GRACE_SECONDS = 3.0
# Environment Codex must not inherit: another key, home, endpoint or proxy could send traffic
# somewhere other than the fake.
_INHERITED_PREFIXES = ("OPENAI_", "CODEX_", "AGENT_LOOP_")
_PROXIES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}


def require_codex() -> Path:
    """The pinned real CLI; skipped when not installed (failed in CI), failed when broken."""
    install = "run `npm ci --prefix tests/codex-cli`"
    if not CODEX.exists():
        message = f"the Codex CLI is not installed at {CODEX}: {install}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    version = clirun.installed_version(CODEX)
    if version != f"codex-cli {CODEX_VERSION}":
        pytest.fail(f"{CODEX} --version gave {version!r}, want {CODEX_VERSION}: {install}")
    return CODEX


@pytest.fixture
def codex_bin() -> Path:
    """The pinned real CLI (see require_codex)."""
    return require_codex()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake Responses API, stopped (and its hung requests released) after the test."""
    with FakeOpenAI() as api:
        yield api


def provider_config(api: FakeOpenAI, retries: int = 0) -> str:
    """A config.toml pointing Codex at the fake. `retries` 0: one request per error, so error
    tests take a fraction of a second (Codex's default retries a 500 five times)."""
    return (f'model_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{api.url}"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
            f"request_max_retries = {retries}\nstream_max_retries = {retries}\n")


def codex_env(home: Path, api: FakeOpenAI, retries: int = 0) -> dict[str, str]:
    """A whole environment for the CLI: a throwaway HOME and CODEX_HOME (its config.toml points
    at the fake) and a fake key. Tests change the returned dict to vary it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(_INHERITED_PREFIXES) and k.lower() not in _PROXIES}
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(provider_config(api, retries))
    env.update({"HOME": str(home), "CODEX_HOME": str(codex_home),
                "OPENAI_API_KEY": "sk-fake-key"})
    return env


def session_files(env: dict[str, str]) -> list[Path]:
    """The rollout files Codex kept (one per thread that persists)."""
    return sorted((Path(env["CODEX_HOME"]) / "sessions").rglob("*.jsonl"))


class CliRun(clirun.CliRun):
    """One finished CLI run with its JSONL output."""

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSONL events, parsed."""
        return self.lines

    def items(self, item_type: str) -> list[dict[str, Any]]:
        """The completed items of one type."""
        return [e["item"] for e in self.of_type("item.completed")
                if e["item"].get("type") == item_type]

    @property
    def thread_id(self) -> str:
        """The thread's id from `thread.started`."""
        return str(self.of_type("thread.started")[0]["thread_id"])


def run_codex(argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None,
              timeout: float = 60) -> CliRun:
    """Run the CLI in a process group of its own; past `timeout`, stop the group and fail."""
    run, timed_out = clirun.run_cli(CliRun, argv, cwd, env, stdin, timeout)
    if timed_out:
        pytest.fail(f"codex timed out after {timeout}s\nstdout: {run.stdout[-2000:]}\n"
                    f"stderr: {run.stderr}")
    return run


# Three tasks in two groups, each writing a file of its own.
CODEX_PLAN = """\
## Backend
- WRITE api.txt: the api
- WRITE api-test.txt: the api test

## Docs
- WRITE readme.txt: the readme
"""


def codex_project(tmp_path: Path, api: FakeOpenAI, tasks: str = CODEX_PLAN,
                  vcs: str = "none") -> tuple[Path, dict[str, str]]:
    """A project in tmp_path/work with the plan `tasks` (under `vcs`), and the environment in
    which agent-loop drives the pinned Codex CLI against `api`."""
    codex = require_codex()
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    if vcs != "none":
        init_repo(work, vcs)
    (work / "tasks.md").write_text(tasks)
    env = codex_env(tmp_path / "codex-home", api)
    env.update({"AGENT_LOOP_CODEX": str(codex), "NO_COLOR": "1"})
    return work, env
