"""The fake claude as a test installs it: the executable first on PATH, and what it recorded.

The executable is tests/support/fake_claude.py (what its `FAKE:` lines do is written there);
`fake_claude` is the fixture every test that runs an agent without paying for one asks for.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


class FakeClaude:
    """The fake claude executable installed for one test, with what it recorded."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.state = folder / "state"
        self.log = folder / "calls.jsonl"
        self.bin = folder / "bin" / "claude"
        self.bin.parent.mkdir(parents=True)
        source = (Path(__file__).parent / "fake_claude.py").read_text()
        self.bin.write_text(f"#!{sys.executable}\n" + source.split("\n", 1)[1])
        self.bin.chmod(0o755)

    def calls(self) -> list[dict]:
        """Every recorded call: argv and cwd. A test polls this while an agent may be writing its
        line: a last line not yet ended is not a call yet."""
        if not self.log.exists():
            return []
        whole = self.log.read_text().rpartition("\n")[0]
        return [json.loads(line) for line in whole.splitlines()]

    def prompts(self) -> list[str]:
        """The prompt of each call (the argument after `--`)."""
        return [c["stdin"] for c in self.calls()]

    def task_runs(self) -> list[dict]:
        """The agent's runs of tasks (stream-json), not the small helper calls (the retry
        advisor, commit messages)."""
        return [c for c in self.calls() if "stream-json" in c["argv"]]

    def task_prompts(self) -> list[str]:
        """The prompt of each of the agent's runs of tasks."""
        return [c["stdin"] for c in self.task_runs()]

    def signals(self) -> list[tuple[str, str]]:
        """The stops the `FAKE: deaf` agents got, in the order they came: (session, signal)."""
        path = self.state / "signals.log"
        if not path.exists():
            return []
        lines = (line.partition(" ") for line in path.read_text().splitlines())
        return [(session, name) for session, _, name in lines]

    def session(self, session_id: str) -> list[str]:
        """The prompts a session has seen, in order."""
        text = (self.state / "sessions" / f"{session_id}.txt").read_text()
        return [p.strip("\n") for p in text.split("\n\x1e\n") if p.strip()]


@pytest.fixture
def fake_claude(tmp_path_factory: pytest.TempPathFactory,
                monkeypatch: pytest.MonkeyPatch) -> FakeClaude:
    """A fake `claude` first on PATH (and in AGENT_LOOP_CLAUDE) for this test."""
    fake = FakeClaude(tmp_path_factory.mktemp("fake-claude"))
    monkeypatch.setenv("FAKE_CLAUDE_STATE", str(fake.state))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(fake.log))
    monkeypatch.setenv("PATH", str(fake.bin.parent) + os.pathsep + os.environ["PATH"])
    return fake
