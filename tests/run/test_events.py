"""events.jsonl: every step of a run as one JSON line, valid against the documented schema."""

from __future__ import annotations

import collections.abc
import subprocess
import sys
import time
import types
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from agentloop.agents import AgentResult, Totals
from agentloop.cli import command
from agentloop.run import events
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git_project
from tests.support.runner import agent_loop

JSON_TYPES = {str: str, int: int, float: (int, float), bool: bool, type(None): type(None)}


def conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a dataclass field's type hint."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        return isinstance(value, list) and all(
            conforms(v, args[0] if args[-1] is Ellipsis else args[i]) for i, v in enumerate(value))
    if origin is dict:
        return isinstance(value, dict)
    if hint in (AgentResult, Totals):
        return isinstance(value, dict) and validate_fields(value, hint)
    if origin is collections.abc.Mapping:
        return isinstance(value, dict)
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float) and isinstance(value, bool):
        return False
    return isinstance(value, JSON_TYPES[hint])


def validate_fields(data: dict, cls: type) -> bool:
    hints = typing.get_type_hints(cls)
    assert set(data) == set(hints), (cls.__name__, set(data) ^ set(hints))
    for name, hint in hints.items():
        assert conforms(data[name], hint), (cls.__name__, name, data[name], hint)
    return True


def validate(line: bytes) -> str:
    data = orjson.loads(line)
    assert data.pop("v") == events.SCHEMA_VERSION
    kind = data.pop("type")
    assert isinstance(data.pop("time"), str)
    validate_fields(data, events.event_types()[kind])
    return kind


def test_a_full_run_writes_valid_events(tmp_path: Path, fake_claude: FakeClaude, jj_bin: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    subprocess.run([jj_bin, "git", "init"], check=True, capture_output=True)
    (tmp_path / "tasks.md").write_text(
        "## A\n- one\n  FAKE: write one.txt 1\n- two\n  FAKE: fail 1\n"
        "## B\n- three\n  FAKE: say TASK_BLOCKED: no key\n")
    result = CliRunner().invoke(command, ["tasks.md", "--vcs", "jj"])
    assert result.exit_code == 4, result.output  # task 3 is blocked
    lines = (tmp_path / ".agent-loop" / "events.jsonl").read_bytes().splitlines()
    kinds = [validate(line) for line in lines]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    for needed in ("TaskStarted", "ChangeCreated", "AgentStarted", "AgentActivity",
                   "AgentFinished", "RetryDecided", "ChangeAbandoned", "MessageDistilled",
                   "TaskFinished"):
        assert needed in kinds
    # Each line reads back into the event it was written from.
    for line in lines:
        event = events.from_json(line)
        assert event is not None
        assert events.to_json(event, orjson.loads(line)["time"]) == line + b"\n"


def test_unknown_or_torn_lines_are_skipped() -> None:
    assert events.from_json(b'{"v": 1, "type": "FromTheFuture"}') is None
    assert events.from_json(b'{"v": 1, "type": "RunStar') is None


def test_status_follow_prints_a_run_live(tmp_path: Path, fake_claude: FakeClaude) -> None:
    (tmp_path / "tasks.md").write_text("- one\n  FAKE: sleep 1\n- two\n")
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none"],
                           cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / ".agent-loop" / "events.jsonl").exists() and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        follow = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--status",
                                 "--follow"], cwd=tmp_path, capture_output=True, text=True,
                                timeout=60)
    finally:
        run.wait(timeout=60)
    assert follow.returncode == 0, follow.stderr
    assert "[1/2] task 1: (ungrouped) > one" in follow.stdout
    assert "[2/2] task 2: (ungrouped) > two" in follow.stdout
    assert "agent-loop done: 2 completed" in follow.stdout


def test_the_retry_advisor_s_cost_has_its_event_and_events_add_up_to_the_total(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Each failed attempt is judged by the retry advisor ($0.0010 a call from the fake): once
    # to retry (task 1 then lands, its message written for $0.0010), once to give up (task 2
    # fails). events.jsonl's costs add up to the run's total, which --status and the closing
    # line say: the agents', the message writer's and the advisor's, each on its task.
    work = git_project(tmp_path, "# Plan\n\n- one\n  FAKE: write one.txt 1\n  FAKE: fail 1\n"
                                 "- two\n  FAKE: fail 9\n"
                                 '  FAKE: advise {"retry": false, "reason": "hopeless"}\n')
    done = agent_loop(work, "--vcs", "git")
    said = done.stdout + done.stderr
    assert done.returncode == 4, said
    assert "1 completed, 1 failed; cost $0.0330;" in said, said
    status = agent_loop(work, "--status").stdout
    assert "total: $0.0330 " in status, status
    lines = (work / ".agent-loop" / "events.jsonl").read_text().splitlines()
    kinds = [orjson.loads(line) for line in lines]
    assert all(validate(line.encode()) for line in lines)
    decided = [(e["index"], e["retry"], e["cost_usd"]) for e in kinds
               if e["type"] == "RetryDecided"]
    assert decided == [(1, True, 0.001), (2, False, 0.001)], kinds
    paid = sum(e.get("cost_usd", 0.0) for e in kinds
               if e["type"] in ("AgentFinished", "MessageDistilled", "RetryDecided"))
    total = next(e["cost_usd"] for e in kinds if e["type"] == "RunFinished")
    assert round(paid, 6) == round(total, 6) == 0.033, kinds
    # Each agent run names the task it ran for.
    ran = [(e["index"], e["result"]["ok"]) for e in kinds if e["type"] == "AgentFinished"]
    assert ran == [(1, False), (1, True), (2, False)], ran
