"""Shared fixtures. Every test is sealed off from the developer's own configuration."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

# Started from a background job (`nohup pytest … &` in a script), the shell leaves SIGINT
# ignored, and an ignored signal stays ignored across exec: every agent-loop a test starts would
# shrug off the Ctrl+C the test sends it. A handler (unlike SIG_IGN) is reset to the default in
# a child, so the children start as they would from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The fake claude (tests/support/fake_agent.py) and the real CLIs against the fake APIs: their
# fixtures, for every test.
pytest_plugins = ["tests.support.fake_agent", "tests.support.claude_cli",
                  "tests.support.codex_cli"]

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def _jj_dir() -> str | None:
    """Where scripts/install-jj.sh put jj, so tests find it without a PATH edit."""
    found = shutil.which("jj")
    if found:
        return str(Path(found).parent)
    tools = Path(os.environ.get("AGENT_LOOP_TOOLS", Path.home() / ".cache" / "agent-loop-tools"))
    for candidate in sorted(tools.glob("jj-*/bin/jj"), reverse=True):
        return str(candidate.parent)
    return None


JJ_DIR = _jj_dir()


@pytest.fixture(autouse=True)
def hermetic_seal(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin HOME, XDG dirs, git and jj identity, dates and config for every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)
    # An agent's shell exports it (agentloop.agents.environment): a test run from one would
    # mark every git command's reflog entry as an agent's.
    monkeypatch.delenv("GIT_REFLOG_ACTION", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00+00:00")
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("JJ_USER", "Test User")
    monkeypatch.setenv("JJ_EMAIL", "test@example.com")
    monkeypatch.setenv("JJ_TIMESTAMP", "2026-01-01T00:00:00+00:00")
    # JJ_RANDOMNESS_SEED is left unset on purpose: a fixed seed gives every jj process the same
    # first change id, so the second `jj new` of a run makes a divergent change.
    monkeypatch.delenv("JJ_RANDOMNESS_SEED", raising=False)
    jj_config = home / "jjconfig.toml"
    jj_config.write_text("")
    monkeypatch.setenv("JJ_CONFIG", str(jj_config))
    if JJ_DIR:
        monkeypatch.setenv("PATH", JJ_DIR + os.pathsep + os.environ["PATH"])
    # The tool must never reach a real Claude from a test, whatever the developer has set.
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                "AGENT_LOOP_CLAUDE", "NO_COLOR", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                "CODEX_HOME", "AGENT_LOOP_CODEX"):
        monkeypatch.delenv(var, raising=False)
    # Nor may the developer's own settings variables (AGENT_LOOP_MODEL, …) reach a run.
    from agentloop.settings.keys import KEYS, env_name

    for key in KEYS:
        monkeypatch.delenv(env_name(key), raising=False)
    # Tests run as root here (and in CI); the real CLI then wants IS_SANDBOX=1, and so does
    # agent-loop's own check. Tests of the refusal remove it.
    monkeypatch.setenv("IS_SANDBOX", "1")


@pytest.fixture
def jj_bin() -> str:
    """The real jj. Missing jj fails the test: scripts/test.sh installs it, nothing skips."""
    if JJ_DIR is None:
        pytest.fail("jj is not installed: run scripts/install-jj.sh (scripts/test.sh does)")
    return str(Path(JJ_DIR) / "jj")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A project folder holding a README, under no version control yet (a module may define
    its own `work`)."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("hello\n")
    return folder
