""".agent-loop.example/ must stay what the current code writes and reads."""

from __future__ import annotations

from pathlib import Path

from agentloop.plan import parse as taskfile
from agentloop.state import schema
from agentloop.state import schema as state_mod
from agentloop.state.schema import TaskState

EXAMPLE = Path(__file__).resolve().parents[2] / ".agent-loop.example"


def test_example_state_loads_with_the_current_schema() -> None:
    path = EXAMPLE / "state.json"
    state = state_mod.from_bytes(path.read_bytes(), path)
    assert state.schema_version == schema.SCHEMA_VERSION, "rerun scripts/make_example.py"
    tasks = taskfile.load(EXAMPLE / "tasks.md")
    assert state.task_file_hash == tasks.sha256
    fresh = [TaskState.from_task(t) for t in tasks.tasks]
    assert [(t.index, t.group, t.task, t.log_name) for t in state.tasks] == \
        [(t.index, t.group, t.task, t.log_name) for t in fresh]
    assert all(t.status == "completed" and t.change_id for t in state.tasks)
    # It holds what the current code writes, field for field.
    assert state.to_bytes() == path.read_bytes()


def test_example_logs_are_the_ones_the_state_names() -> None:
    state = state_mod.from_bytes((EXAMPLE / "state.json").read_bytes(), EXAMPLE)
    for task in state.tasks:
        assert task.log is not None
        log = EXAMPLE / "logs" / Path(task.log).name
        text = log.read_text()
        assert text.startswith("== agent-loop") and "success" in text
        assert (log.with_suffix(".jsonl")).exists()
