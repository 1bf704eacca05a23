"""learnings.md as the user reads it: each entry headed by its task, and a redo replacing its
entry instead of repeating it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.state.learnings import Learnings
from tests.support.fake_agent import FakeClaude


def test_an_entry_names_its_task_and_plan_and_a_redo_replaces_it(tmp_path: Path) -> None:
    learnings = Learnings(tmp_path, "docs/plan.md")
    learnings.record(1, 1, "t1", "", "use make", "build it")
    learnings.record(2, 1, "t2", "", "tests are slow", "test it")
    learnings.path.write_text("My own note.\n\n" + learnings.path.read_text())
    learnings.record(1, 1, "t3", "", "use make -j4", "build it")
    learnings.record(1, 2, "t4", "", "cache helps", "build it")
    assert learnings.path.read_text() == (
        "My own note.\n\n"
        "## Task 1: build it (docs/plan.md, t3)\nuse make -j4\n\n"
        "## Task 2: test it (docs/plan.md, t2)\ntests are slow\n\n"
        "## Task 1, iteration 2: build it (docs/plan.md, t4)\ncache helps\n")


def test_a_run_again_of_a_task_keeps_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- build it\n  FAKE: say Learnings: use make\n- two\n")
    for args in ([], ["--task", "1", "--again"]):
        result = CliRunner().invoke(command, ["tasks.md", "--vcs", "none", *args])
        assert result.exit_code == 0, result.output
    text = (tmp_path / ".agent-loop" / "learnings.md").read_text()
    assert text.count("## Task") == 1, text
    assert text.startswith("## Task 1: build it (tasks.md, ")
    assert text.endswith(")\nuse make\n")
