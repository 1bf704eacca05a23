"""Text and JSON are two renderings of the same data."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from tests.conftest import FakeClaude


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, ["tasks.md", *args])
    return result.exit_code, result.output


def test_dry_run_json_lists_every_task_with_its_full_text_and_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("## A\n- one\n  more of one\n- [x] two\n## B\n- three\n")
    code, out = invoke("--dry-run", "--json")
    assert code == 0, out
    plan = orjson.loads(out)
    assert [(t["index"], t["group"], t["text"], t["runs"]) for t in plan["tasks"]] == [
        (1, "A", "one\nmore of one", True), (2, "A", "two", False), (3, "B", "three", True)]
    assert plan["tasks"][1]["why_not"] == "checked off in the task file"
    assert plan["tasks"][2]["how"] == "starts a fresh session"
    code, text = invoke("--dry-run")
    assert "[2/3] A > two  (not run: checked off in the task file)" in text
    assert not (tmp_path / ".agent-loop").exists()
    assert invoke("--vcs", "none")[0] == 0
    code, out = invoke("--dry-run", "--json", "--task", "1", "--again")
    assert [t["runs"] for t in orjson.loads(out)["tasks"]] == [True, False, False]


def test_status_text_and_json_say_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n- two\n  FAKE: exit 1\n"
                                       '  FAKE: advise {"retry": false, "reason": "no"}\n')
    assert invoke("--vcs", "none")[0] == 4
    code, out = invoke("--status", "--json")
    data = orjson.loads(out)
    assert code == 0 and data["counts"] == {"completed": 1, "failed": 1}
    code, text = invoke("--status")
    assert "2 task(s): 1 completed, 1 failed" in text and "error: no" in text
    assert f"cost ${data['cost_usd']:.4f}" in text
