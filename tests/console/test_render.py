"""Text and JSON are two renderings of the same data."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from tests.support.fake_agent import FakeClaude


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, ["tasks.md", *args])
    return result.exit_code, result.output


def test_dry_run_json_lists_every_task_with_its_full_text_and_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("## A\n- [ ] one\n  more of one\n- [x] two\n## B\n"
                                       "- [ ] three\n")
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


# What a run a stop ended before its agent spoke leaves in the record: no session, no model,
# no usage, its cost not known.
UNSPOKEN = {"outcome": "interrupted", "session_id": None, "cost_usd": 0.0,
            "session_cost_usd": 0.0, "session_usage": {}, "cost_known": False, "model": None,
            "usage": {}, "num_turns": None, "duration_ms": None, "exit_code": None}


def _with_a_stopped_run(
        tmp_path: Path, history: Callable[[dict[str, Any], dict[str, Any]], list[Any]],
        **own: Any) -> tuple[Path, dict[str, Any], dict[str, Any], Path]:
    """The plan `- one` run (no vcs), then a run a stop ended before its agent spoke written into
    its task's record: the paid run's record with UNSPOKEN and `own` (its log, its role, ...),
    put beside it by `history(paid, stopped)`; its log as the stop left it (a header, an empty
    stream log). The state file, the state written, the stopped run and its log."""
    (tmp_path / "tasks.md").write_text("- one\n")
    assert invoke("--vcs", "none")[0] == 0
    path = tmp_path / ".agent-loop" / "state.json"
    state = orjson.loads(path.read_bytes())
    ran = state["tasks"][0]["history"][0]
    stopped = {**ran, **UNSPOKEN, **own}
    state["tasks"][0]["history"] = history(ran, stopped)
    path.write_bytes(orjson.dumps(state))
    log = tmp_path / stopped["log"]
    log.write_text("== agent-loop ==\n-- agent --\n")
    log.with_suffix(".jsonl").write_text("")
    return path, state, stopped, log


def test_a_run_stopped_before_its_agent_said_a_word_is_no_run_and_no_unknown_cost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    # A kill -9 before task 1's agent started: the next run ended that attempt as interrupted,
    # its cost not known, and ran the task again. --status said "2 run(s)" and "$0.0110 or more
    # (not every run's cost is known)": its stream log (.jsonl) is empty, no agent ran.
    monkeypatch.chdir(tmp_path)
    path, state, killed, log = _with_a_stopped_run(
        tmp_path, lambda ran, killed: [killed, {**ran, "number": 2}],
        log=".agent-loop/logs/001-ungrouped--one-k.log")
    code, text = invoke("--status")
    assert code == 0 and "; cost $0.0100; " in text and "1 run(s)" in text, text
    assert orjson.loads(invoke("--status", "--json")[1])["cost_known"] is True
    assert "cost $0.0100; state in" in CliRunner().invoke(command, ["--status"]).output
    # Its agent said a word (it started): a run, whose cost is not known.
    log.with_suffix(".jsonl").write_text('{"type": "system", "subtype": "init"}\n')
    code, text = invoke("--status")
    assert "or more (not every run's cost is known)" in text and "2 run(s)" in text, text
    # The killed run alone (no agent ever ran for the plan): nothing said of cost, where it
    # said "cost unknown (tokens only)".
    log.with_suffix(".jsonl").write_text("")
    state["tasks"][0].update(history=[killed], status="interrupted", cost_usd=0.0,
                             change_id=None, commit_id=None, files=[])
    path.write_bytes(orjson.dumps(state))
    code, text = invoke("--status")
    assert code == 0 and "cost" not in text.splitlines()[0] and "0 run(s)" in text, text
    assert "cost" not in CliRunner().invoke(command, ["--status"]).output


def test_a_stopped_run_hides_no_other_run_of_its_attempt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    # A reviewer run a stop ended before its agent spoke shares its attempt's number with the
    # developer's paid run: --status dropped the whole attempt, its cost from the header and
    # "0 run(s) ... $0.0100" on the task's line. Each record is its own run.
    monkeypatch.chdir(tmp_path)
    _with_a_stopped_run(tmp_path, lambda ran, review: [ran, review], role="reviewer", round=1,
                        log=".agent-loop/logs/001-ungrouped--one-review1.log")
    code, text = invoke("--status")
    assert code == 0 and "; cost $0.0100; " in text.splitlines()[0] and "1 run(s)" in text, text
    assert "cost $0.0100; state in" in CliRunner().invoke(command, ["--status"]).output


def git_work(tmp_path: Path, text: str) -> Path:
    """A git repository holding the plan `text` as tasks.md, committed."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "tasks.md").write_text(text)
    subprocess.run([*git, "add", "tasks.md"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "plan"], cwd=tmp_path, check=True)
    return tmp_path


def subjects(work: Path) -> list[str]:
    return subprocess.run(["git", "log", "--format=%s"], cwd=work, capture_output=True,
                          text=True, check=True).stdout.splitlines()


PLAN = "# Shop\n\n- one\n  FAKE: write one.txt 1\n- two\n  FAKE: say TASK_BLOCKED: need a key\n"


def test_session_ids_are_shown_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(git_work(tmp_path, PLAN))
    code, out = invoke("--vcs", "git", "--no-distill")
    assert code == 4, out
    # The log and --status --json keep them whole.
    assert "ran in session 00000000 ($0.0100" in out and "00000000-0000" not in out
    assert "resuming session 00000000, output -> " in out
    code, out = invoke("--dry-run", "--task", "2")
    assert "(resumes session 00000000)" in out


def test_a_blocked_task_says_so_once_and_never_completed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(git_work(tmp_path, PLAN))
    code, out = invoke("--vcs", "git", "--no-distill")
    task_two = out.split("[2/2] task 2")[1].split("agent-loop done")[0]
    assert code == 4 and "completed" not in task_two, out
    assert [line for line in task_two.splitlines() if "blocked" in line] == [
        "  task 2 blocked: need a key"]


def test_a_commit_outside_any_group_goes_by_the_plan_title(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    work = git_work(tmp_path, PLAN)
    monkeypatch.chdir(work)
    invoke("--vcs", "git", "--no-distill")
    assert subjects(work)[0] == "agent-loop: Shop / one"


def test_the_undo_hint_names_only_a_task_this_run_completed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(git_work(tmp_path, PLAN))
    code, out = invoke("--vcs", "git", "--no-distill")
    assert "To undo one task, e.g. task 1: git revert " in out
    # A run that completes nothing names no task to undo.
    code, out = invoke("--vcs", "git", "--no-distill", "--task", "2")
    assert code == 4 and "To undo" not in out, out
    code, out = invoke("--vcs", "git", "--no-distill")
    assert code == 0 and "0 of 2 task(s) to run, 1 done already, 1 not run this time" in out
    assert "To undo" not in out


def test_a_rehearsal_tries_no_helper_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           fake_claude: FakeClaude) -> None:
    work = git_work(tmp_path, "- one\n- two\n")
    monkeypatch.chdir(work)
    code, out = invoke("--rehearse", "--vcs", "git")
    assert code == 0, out
    assert "distiller" not in out and "message:" not in out
    assert fake_claude.calls() == []


def test_from_a_subfolder_every_path_is_from_there(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   fake_claude: FakeClaude) -> None:
    work = git_work(tmp_path, "- one\n- two\n")
    (work / "sub").mkdir()
    monkeypatch.chdir(work / "sub")
    result = CliRunner().invoke(command, ["../tasks.md", "--vcs", "git", "--no-distill"])
    out = result.output
    assert result.exit_code == 0, out
    assert "read ../.agent-loop/logs/001-ungrouped--one.log" in out
    assert "logs in ../.agent-loop/logs/" in out
    assert " .agent-loop/" not in out, out
