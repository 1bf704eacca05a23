"""One owner of task records: in the run core a task's record (its status, its attempts' records,
its costs) changes only in agentloop.run.ledger, and the state is saved only there, in the
controller's thread. Read from the source (every module of agentloop/run/), and held at run
time (a save from a lane's own thread raises)."""

from __future__ import annotations

import ast
import dataclasses
import threading
from pathlib import Path

import pytest

import agentloop.run
from agentloop.run import ledger
from agentloop.run.context import Shared
from agentloop.state.schema import Attempt, TaskState

RUN = Path(agentloop.run.__file__).parent
OWNER = RUN / "ledger.py"
# What a task's record and an agent run's record hold; the list fields, what changes them.
FIELDS = {f.name for f in dataclasses.fields(TaskState)} | \
    {f.name for f in dataclasses.fields(Attempt)} | \
    {"task_file"}   # the plan's name in the state: changed when the plan was renamed meanwhile
MUTATORS = {"append", "extend", "clear", "insert", "pop", "remove", "update", "add"}


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        found: list[ast.expr] = []
        for target in node.targets:
            found += list(target.elts) if isinstance(target, ast.Tuple) else [target]
        return found
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def writes_to_records(source: str) -> list[str]:
    """Each line of `source` that changes a task record or saves the state itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for target in _targets(node):
            # `self.x = …` builds the module's own object, `_where.x` a module's private one
            # (a thread-local): never a task's record.
            if isinstance(target, ast.Attribute) and target.attr in FIELDS and not (
                    isinstance(target.value, ast.Name) and (target.value.id == "self"
                                                            or target.value.id.startswith("_"))):
                found.append(f"line {node.lineno}: assigns .{target.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.attr == "save" and not (isinstance(func.value, ast.Name)
                                            and func.value.id == "ledger"):
                found.append(f"line {node.lineno}: calls .save() (only the ledger saves)")
            if func.attr in MUTATORS and isinstance(func.value, ast.Attribute) and \
                    func.value.attr in FIELDS:
                found.append(f"line {node.lineno}: changes .{func.value.attr}")
    return found


def test_only_the_ledger_changes_a_task_record_or_saves_the_state() -> None:
    offenders = {
        str(path.relative_to(RUN.parent.parent)): lines
        for path in sorted(RUN.rglob("*.py")) if path != OWNER
        if (lines := writes_to_records(path.read_text(encoding="utf-8")))}
    assert offenders == {}, "records change only in agentloop/run/ledger.py: hand the " \
        "controller a value (agentloop.run.decisions) instead"


def test_the_source_check_finds_a_record_changed_outside_the_ledger() -> None:
    # What the lanes did before the decisions became values: each of these is found.
    assert len(writes_to_records(
        "def settle(run, task, attempt):\n"
        "    task.status = 'completed'\n"
        "    attempt.outcome, task.error = 'failed', 'why'\n"
        "    task.cost_usd += 1.0\n"
        "    task.history.append(attempt)\n"
        "    run.save(task)\n"
        "    run.project.store.save(run.state, task)\n")) == 7
    assert writes_to_records("ledger.save(run, task)\nself.status = 1\n") == []


def test_a_save_from_a_thread_other_than_the_controllers_raises(tmp_path: Path) -> None:
    # The guard sits before any write: a run of nothing but its shared part is enough to see it.
    shared = Shared()
    shared.owner = threading.current_thread()
    run = _Bare(shared)
    caught: list[BaseException] = []

    def lane() -> None:
        try:
            ledger.save(run)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - what the lane's thread raised
            caught.append(exc)

    worker = threading.Thread(target=lane, name="lane Backend")
    worker.start()
    worker.join()
    assert len(caught) == 1 and isinstance(caught[0], ledger.LaneWrote)
    assert "lane Backend changed the run's records" in str(caught[0])
    with pytest.raises(AttributeError):  # the owner's own save goes past the guard
        ledger.save(run)  # type: ignore[arg-type]


@dataclasses.dataclass
class _Bare:
    shared: Shared


# The ledger's functions a module other than the ledger calls: each from the controller's
# thread (a run's start, the controller's own answers) or reading only. A lane that finds a
# record to change hands a value (agentloop.run.decisions) instead.
CALLED_OUTSIDE = {"apply", "save", "left_open", "stalls", "found_done", "again",
                  "skip", "reword", "plan_renamed", "closed_unreached", "remembered_on_stop",
                  "plan_read", "renamed"}


def test_no_module_calls_a_ledger_writer_the_controller_does_not_own() -> None:
    called = {}
    for path in sorted(RUN.rglob("*.py")):
        if path == OWNER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "ledger" and node.attr not in CALLED_OUTSIDE and \
                    node.attr != "LaneWrote":
                called[f"{path.name}:{node.lineno}"] = node.attr
    assert called == {}, "a lane hands the controller a value instead (agentloop.run.decisions)"
