"""journal.py: saves of one task are journal lines, read back on top of their snapshot only, and
folded into state.json when the run lets go of its lock."""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from agentloop.state.schema import Attempt, State
from agentloop.state.store import Store
from tests.state.test_store import kill_a_writer, make_state


def saved(tmp_path: Path, tasks: int = 3) -> tuple[Store, State]:
    """A store with a fresh state's snapshot in it, and that state."""
    store, state = Store(tmp_path), make_state(tasks)
    store.save(state)
    return store, state


def test_a_task_save_is_a_line_and_loads_on_top_of_the_snapshot(tmp_path: Path) -> None:
    store, state = saved(tmp_path)
    snapshot = store.state_path.read_bytes()
    state.tasks[1].status = "completed"
    state.tasks[1].history.append(Attempt(number=1, started_at="t", outcome="completed"))
    state.warnings.append("a warning raised mid-run")
    store.save(state, state.tasks[1])
    assert store.state_path.read_bytes() == snapshot  # not rewritten
    assert len(store.journal.path.read_bytes().splitlines()) == 1
    loaded = store.load()
    assert loaded is not None
    assert loaded.tasks == state.tasks and loaded.warnings == ["a warning raised mid-run"]
    assert loaded.updated_at == state.updated_at


def test_a_line_cut_short_is_not_read(tmp_path: Path) -> None:
    store, state = saved(tmp_path)
    state.tasks[0].status = "running"
    store.save(state, state.tasks[0])
    state.tasks[0].status = "completed"
    store.save(state, state.tasks[0])
    whole = store.journal.path.read_bytes()
    for cut in (len(whole) - 1, len(whole) - 30, whole.index(b"\n") + 1):
        store.journal.path.write_bytes(whole[:cut])
        loaded = store.load()
        assert loaded is not None and loaded.tasks[0].status == "running"
    store.journal.path.write_bytes(whole[:whole.index(b"\n")] + b"\0\0\0\n" + b"garbage\n")
    loaded = store.load()
    assert loaded is not None and loaded.tasks[0].status == "pending"


def test_a_journal_of_another_snapshot_is_never_applied(tmp_path: Path) -> None:
    store, state = saved(tmp_path)
    state.tasks[0].status = "completed"
    store.save(state, state.tasks[0])
    # Someone puts an older state.json back by hand: the journal is not its.
    data = orjson.loads(store.state_path.read_bytes())
    data["journal_id"] = "0123456789abcdef"
    store.state_path.write_bytes(orjson.dumps(data))
    loaded = store.load()
    assert loaded is not None and loaded.tasks[0].status == "pending"


def test_a_deleted_journal_makes_the_next_save_a_snapshot(tmp_path: Path) -> None:
    store, state = saved(tmp_path)
    store.journal.path.unlink()  # an agent's `git clean -fdx`
    store.state_path.unlink()
    state.tasks[2].status = "completed"
    store.save(state, state.tasks[2])
    loaded = store.load()
    assert loaded is not None and loaded.tasks[2].status == "completed"
    assert orjson.loads(store.state_path.read_bytes())["tasks"][2]["status"] == "completed"


def test_letting_go_of_the_lock_folds_the_journal_into_state_json(tmp_path: Path) -> None:
    store = Store(tmp_path)
    state = make_state()
    with store.lock():
        store.save(state)
        for task in state.tasks:
            task.status = "completed"
            store.save(state, task)
    assert not store.journal.path.exists()
    data = orjson.loads(store.state_path.read_bytes())
    assert [t["status"] for t in data["tasks"]] == ["completed"] * 3
    assert data["journal_id"] is None


def test_a_journal_with_nothing_since_the_last_snapshot_just_goes(tmp_path: Path) -> None:
    # The run's last save was a snapshot: state.json is not read and written a second time.
    store = Store(tmp_path)
    state = make_state()
    with store.lock():
        store.save(state)
        state.tasks[0].status = "completed"
        store.save(state, state.tasks[0])
        state.warnings.append("said at the end")
        store.save(state)  # a snapshot, the journal started afresh
        last = store.state_path.read_bytes()
        ino = store.state_path.stat().st_ino
    assert not store.journal.path.exists()
    assert store.state_path.read_bytes() == last and store.state_path.stat().st_ino == ino
    loaded = store.load()
    assert loaded is not None and loaded.tasks == state.tasks
    assert loaded.warnings == ["said at the end"]
    assert Store(tmp_path).load() == loaded  # another reader, a journal named and not there


def test_the_journal_stays_short_whatever_the_number_of_saves(tmp_path: Path) -> None:
    store, state = saved(tmp_path, 100)
    for n in range(1000):
        task = state.tasks[n % 100]
        task.attempts = n
        store.save(state, task)
        assert store.journal.lines <= 100
    loaded = store.load()
    assert loaded is not None and loaded == state


WRITER = """
import sys
from pathlib import Path
from agentloop.state.schema import State, TaskState
from agentloop.state.store import Store
store = Store(Path(sys.argv[1]))
tasks = [TaskState(index=i, group='G', task='t' * 3000, line=i, summary='s', log_name='x')
         for i in range(1, 201)]
state = State(task_file='tasks.md', task_file_hash='sha256:x', tasks=tasks)
store.save(state)
n = 0
while True:
    n += 1
    task = tasks[n % 200]
    task.attempts = n
    store.save(state, task)
"""


def test_a_writer_killed_mid_line_leaves_a_state_that_loads(tmp_path: Path) -> None:
    rng = random.Random(11)
    for _ in range(10):
        kill_a_writer(WRITER, tmp_path, rng, 0.4)
        loaded = Store(tmp_path).load()
        assert loaded is not None and len(loaded.tasks) == 200
        # Saves went in order: the task saved last has the highest count of all.
        counts = [t.attempts for t in loaded.tasks]
        newest = counts.index(max(counts))
        assert all(c < counts[newest] for i, c in enumerate(counts) if i != newest)
