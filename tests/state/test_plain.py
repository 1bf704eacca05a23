"""The plain reader (`--status` of an unchanged plan) against the full reader, on real state
files the store writes: the same records, the same printed `--status`, and the full reader for
every state it has any doubt about."""

from __future__ import annotations

import dataclasses
import subprocess
import typing
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from agentloop import standing
from agentloop.console import render
from agentloop.errors import StateError
from agentloop.state import fields, plain, schema
from agentloop.state.project import load_plan, open_project
from agentloop.state.schema import Attempt, State

PLAN = "# Title\n## One\n- first\n- second\n## Two\nDepends on: One\n- third\n- fourth\n"


def as_json(value: Any) -> Any:
    """A plain record (or list of them) as the JSON it was read from."""
    if isinstance(value, plain.Record):
        return {k: as_json(v) for k, v in vars(value).items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def run(n: int, outcome: str = "completed", **more: Any) -> Attempt:
    given: dict[str, Any] = {"model": "opus", "finished_at": "2026-01-01T00:01:00+00:00",
                             **more}
    return Attempt(number=n, started_at="2026-01-01T00:00:00+00:00", outcome=outcome,
                   cost_usd=0.25, usage={"input_tokens": 1200, "output_tokens": 30}, num_turns=3,
                   duration_ms=4100, exit_code=0, **given)


def finished(state: State) -> None:
    state.vcs, state.agent = "git", "claude"
    one, two, three, four = state.tasks
    one.status, one.change_id, one.cost_usd = "completed", "a" * 40, 0.25
    one.history = [run(1, checks=[{"command": "make test", "exit_code": 0, "seconds": 1.5,
                                   "round": 0, "timed_out": False}])]
    two.status, two.error, two.attempts = "failed", "the agent gave up", 2
    two.history = [run(1, "failed", reason="tests fail"), run(2, "failed", hint="look at x")]
    three.status, three.waiting = "held", "your edits to a.txt"
    four.status, four.feedback = "unapproved", "not like this\nplease"
    four.history = [run(1, role="reviewer", round=1, verdict="feedback")]
    state.retired = [run(1, model="haiku")]
    state.remembered = {"budget": 5.0}


def running(state: State) -> None:
    finished(state)
    state.tasks[2].status = "running"
    state.tasks[3].status = "running"


def untouched(state: State) -> None:
    state.vcs = "none"


SHAPES: dict[str, Callable[[State], None]] = {
    "finished": finished, "running": running, "no run yet": untouched}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "tasks.md").write_text(PLAN)
    return tmp_path


def saved(repo: Path, shape: Callable[[State], None]) -> State:
    """A state of `shape` written by the store, as a run leaves it."""
    project = open_project(Path("tasks.md"), repo)
    state, _, _ = load_plan(project)
    shape(state)
    project.store.snapshot(state, final=True)
    return state


def both(repo: Path) -> tuple[str, str, str, str]:
    """--status and --status --json by the plain reader, then by the full one."""
    view = standing.status(Path("tasks.md"), repo)
    assert isinstance(view.state, plain.Record), "the plain reader was not taken"
    full = standing._read_in_full(Path("tasks.md"), repo, False)
    assert isinstance(full.state, State)
    return (render.status_text(view, repo), orjson.dumps(render.status_json(view)).decode(),
            render.status_text(full, repo), orjson.dumps(render.status_json(full)).decode())


@pytest.mark.parametrize("shape", SHAPES)
def test_the_plain_reader_reads_what_the_full_reader_reads(repo: Path, shape: str) -> None:
    state = saved(repo, SHAPES[shape])
    project = open_project(Path("tasks.md"), repo)
    record = plain.load(project.store.dir, state.task_file_hash)
    assert record is not None
    assert as_json(record) == orjson.loads(state.to_bytes())
    text, json_, full_text, full_json = both(repo)
    assert text == full_text
    assert json_ == full_json


def test_status_without_a_plan_says_the_same_by_either_reader(repo: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              ) -> None:
    saved(repo, finished)
    root, plans = standing.overview(repo)
    text = render.overview_text(root, plans, repo)
    monkeypatch.setattr(plain, "load", lambda folder, plan_hash, read=None: None)
    root, plans = standing.overview(repo)
    assert render.overview_text(root, plans, repo) == text
    assert "4 task(s), 1 done, 1 failed" in text


def rewrite(repo: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    path = repo / ".agent-loop" / "state.json"
    data = orjson.loads(path.read_bytes())
    change(data)
    path.write_bytes(orjson.dumps(data))


DOUBTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "an old schema": lambda d: d.update(schema_version=2),
    "a newer schema": lambda d: d.update(schema_version=99),
    "a field missing": lambda d: d["tasks"][1].pop("waiting"),
    "an attempt's field missing": lambda d: d["tasks"][0]["history"][0].pop("work_kept"),
    "fields in another order": lambda d: d["tasks"][0].update(index=d["tasks"][0].pop("index")),
    "a field of the wrong type": lambda d: d["tasks"][0].update(attempts="2"),
    "a nested value of the wrong type": lambda d: d["tasks"][0]["history"][0].update(
        usage={"input_tokens": "many"}),
    "an unknown status": lambda d: d["tasks"][0].update(status="sleeping"),
    "a task out of place": lambda d: d["tasks"][0].update(index=7),
    "an edited plan": lambda d: d.update(task_file_hash="sha256:0"),
    "an older plan reader": lambda d: d.update(reader=1),
}


@pytest.mark.parametrize("doubt", DOUBTS)
def test_a_state_in_doubt_goes_to_the_full_reader(repo: Path, doubt: str) -> None:
    state = saved(repo, finished)
    rewrite(repo, DOUBTS[doubt])
    project = open_project(Path("tasks.md"), repo)
    assert plain.load(project.store.dir, state.task_file_hash) is None
    # --status says what the full reader says of it (an old file upgraded, a damaged one named).
    try:
        full: Any = render.status_text(standing._read_in_full(Path("tasks.md"), repo, False),
                                       repo)
    except Exception as exc:  # noqa: BLE001 - the same error either way
        full = repr(exc)
    try:
        said: Any = render.status_text(standing.status(Path("tasks.md"), repo), repo)
    except Exception as exc:  # noqa: BLE001
        said = repr(exc)
    assert said == full


# What the standard library's JSON reader takes and orjson, the full reader's, does not: a number
# beyond a double (orjson refuses it), an integer beyond 64 bits (orjson makes it a float), a
# lone surrogate escape or bytes that are not UTF-8 (orjson refuses both). Written by hand:
# neither writer writes them.
BEYOND: dict[str, bytes] = {
    "a float beyond a double": b"1e400",
    "a float of 400 digits": b"1" + b"0" * 400 + b".5",
    "an integer beyond 64 bits": b"18446744073709551616",
    "a negative integer beyond 64 bits": b"-9223372036854775809",
    "a lone surrogate": b'"\\ud800"',
    "a low surrogate first": b'"\\udc00\\ud800"',
    "a surrogate in the bytes": b'"\xed\xa0\x80"',   # not UTF-8
}


@pytest.mark.parametrize("beyond", BEYOND)
def test_what_orjson_reads_otherwise_goes_to_the_full_reader(repo: Path, beyond: str) -> None:
    state = saved(repo, finished)
    rewrite(repo, lambda d: d.update(remembered={"hand": 424242}))
    path = repo / ".agent-loop" / "state.json"
    path.write_bytes(path.read_bytes().replace(b"424242", BEYOND[beyond]))
    project = open_project(Path("tasks.md"), repo)
    assert plain.load(project.store.dir, state.task_file_hash) is None
    # --status says what the full reader says: the file named invalid, or orjson's float.
    said = []
    for read in (lambda: standing._read_in_full(Path("tasks.md"), repo, False),
                 lambda: standing.status(Path("tasks.md"), repo)):
        try:
            said.append(render.status_text(read(), repo))
        except StateError as exc:
            said.append(str(exc))
    assert said[0] == said[1]
    assert ("is not valid JSON" in said[0]) == ("integer" not in beyond)


def test_numbers_orjson_reads_alike_stay_with_the_plain_reader(repo: Path) -> None:
    """The edges orjson still reads as the standard library does: no doubt, no full read."""
    state = saved(repo, finished)
    rewrite(repo, lambda d: d.update(remembered={
        "hand": [424242, 424243, 424244, 424245, 424246]}))
    path = repo / ".agent-loop" / "state.json"
    edges = {b"424242": b"18446744073709551615", b"424243": b"-9223372036854775808",
             b"424244": b"1.7976931348623157e308", b"424245": b"1e-400",
             b"424246": b'"\\ud83d\\ude00"'}
    raw = path.read_bytes()
    for mark, value in edges.items():
        raw = raw.replace(mark, value)
    path.write_bytes(raw)
    project = open_project(Path("tasks.md"), repo)
    record = plain.load(project.store.dir, state.task_file_hash)
    assert record is not None
    assert as_json(record) == orjson.loads(raw)


def test_an_old_version_s_file_reads_the_same(repo: Path) -> None:
    """Schema 1 (no journal_id) from an earlier agent-loop: upgraded by the full reader."""
    saved(repo, finished)
    rewrite(repo, lambda d: (d.update(schema_version=1), d.pop("journal_id")))
    view = standing.status(Path("tasks.md"), repo)
    assert isinstance(view.state, State)
    assert "4 task(s): 1 completed, 1 failed, 1 held, 1 unapproved" in render.status_text(
        view, repo)


def running_with_a_journal(repo: Path) -> tuple[State, Path]:
    """A running plan's state: a snapshot, and journal lines on it (a task begun, one done)."""
    state = saved(repo, finished)
    project = open_project(Path("tasks.md"), repo)
    project.store.snapshot(state)            # a run's snapshot, its journal started
    assert plain.load(project.store.dir, state.task_file_hash) is not None   # empty journal
    state.tasks[2].status = "running"
    state.tasks[2].history.append(run(1, "running", finished_at=None))
    project.store.save(state, state.tasks[2])
    state.tasks[2].status, state.tasks[2].change_id = "completed", "b" * 40
    state.retired.append(run(2, model="sonnet"))
    state.remembered = {"budget": 7.5}
    project.store.save(state, state.tasks[2])
    return state, project.store.journal.path


def test_a_running_plan_s_journal_is_read_by_either_reader_the_same(repo: Path) -> None:
    state, journal = running_with_a_journal(repo)
    assert journal.read_bytes().count(b"\n") == 2
    record = plain.load(journal.parent, state.task_file_hash)
    assert record is not None
    expected = orjson.loads(state.to_bytes())
    assert as_json(record) == expected
    text, json_, full_text, full_json = both(repo)
    assert (text, json_) == (full_text, full_json)
    assert "budget: $7.5000" in text and "2 completed" in text


TORN: dict[str, Callable[[bytes], bytes]] = {
    "a line cut short": lambda raw: raw + b'{"snapshot": "',
    "a line that is not JSON": lambda raw: b"{nope}\n" + raw,
    "another snapshot's line": lambda raw: raw.replace(b'"snapshot":"', b'"snapshot":"x', 1),
    "a task short of a field": lambda raw: raw.replace(b'"done_as":null,', b"", 1),
    "a field the state has not": lambda raw: raw.replace(b'"top":{', b'"top":{"x":1,', 1),
    "a top field of the wrong type": lambda raw: raw.replace(b'"budget":7.5', b'"b":[]', 1)
    .replace(b'"remembered":{', b'"remembered":"', 1),
    "a number beyond a double": lambda raw: raw.replace(b'"budget":7.5', b'"budget":1e400', 1),
    "an integer beyond 64 bits": lambda raw: raw.replace(b'"budget":7.5',
                                                         b'"budget":36893488147419103232', 1),
}


@pytest.mark.parametrize("torn", TORN)
def test_a_journal_in_doubt_goes_to_the_full_reader(repo: Path, torn: str) -> None:
    state, journal = running_with_a_journal(repo)
    journal.write_bytes(TORN[torn](journal.read_bytes()))
    if torn != "a line cut short":   # what follows the last newline is never read
        assert plain.load(journal.parent, state.task_file_hash) is None
    view = standing.status(Path("tasks.md"), repo)
    full = standing._read_in_full(Path("tasks.md"), repo, False)
    assert render.status_text(view, repo) == render.status_text(full, repo)


@pytest.mark.parametrize("cls", [schema.Attempt, schema.TaskState, schema.State])
def test_the_table_says_what_the_record_classes_declare(cls: type) -> None:
    """Each field of the table takes the JSON types its class's annotation allows."""
    table = {schema.Attempt: fields.ATTEMPT, schema.TaskState: fields.TASK,
             schema.State: fields.STATE}[cls]
    hints = typing.get_type_hints(cls)
    assert [f.name for f in dataclasses.fields(cls)] == [name for name, _ in table]
    samples: list[Any] = ["x", 1, 2.5, True, None, [], ["x"], [1], [{}], {}, {"k": 1},
                          {"k": "v"}, {"k": ["x"]}, {"k": [1]}]
    for name, test in table:
        for value in samples:
            fits = type(value) in test if isinstance(test, frozenset) else test(value)
            assert fits == _fits(hints[name], value), (cls.__name__, name, value)


def _fits(hint: Any, value: Any) -> bool:
    """Whether a JSON value fits an annotation, read off the annotation itself."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, __import__("types").UnionType):
        return any(_fits(a, value) for a in args)
    if hint is float:
        return type(value) in (float, int)
    if hint in (str, int, bool, type(None)):
        return type(value) is hint
    if hint is Any:
        return True
    if origin is list:
        if args[0] in (schema.Attempt, schema.TaskState):
            return type(value) is list
        return type(value) is list and all(_fits(args[0], v) for v in value)
    if origin is dict:
        return type(value) is dict and all(_fits(args[1], v) for v in value.values())
    raise AssertionError(f"no rule for {hint}")
