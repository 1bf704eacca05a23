"""state.py: the store survives crashes, refuses what it cannot read, and locks one run at a
time."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from freezegun import freeze_time

from agentloop.errors import StateError, StateLocked
from agentloop.state import schema
from agentloop.state import schema as records
from agentloop.state.project import load_state, open_project
from agentloop.state.schema import Attempt, State, TaskState
from agentloop.state.status import TaskStatus
from agentloop.state.store import Store


def make_state(n: int = 3) -> State:
    tasks = [TaskState(index=i, group="G", task=f"task {i}", line=i, summary=f"task {i}",
                       log_name=f"{i:03d}-g--task-{i}") for i in range(1, n + 1)]
    return State(task_file="tasks.md", task_file_hash="sha256:abc", tasks=tasks)


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    store = Store(tmp_path)
    state = make_state()
    state.tasks[0].status = "completed"
    state.tasks[0].history.append(Attempt(number=1, started_at="t", outcome="completed",
                                          usage={"input_tokens": 5}, cost_usd=0.5))
    store.save(state)
    loaded = store.load()
    assert loaded == state
    raw = orjson.loads(store.state_path.read_bytes())
    assert raw["schema_version"] == schema.SCHEMA_VERSION
    assert raw["tasks"][0]["history"][0]["usage"] == {"input_tokens": 5}


def test_no_state_is_none(tmp_path: Path) -> None:
    assert Store(tmp_path).load() is None


@freeze_time("2026-03-04 05:06:07")
def test_times_come_from_the_clock(tmp_path: Path) -> None:
    store = Store(tmp_path)
    state = make_state()
    store.save(state)
    assert store.load().updated_at == "2026-03-04T05:06:07+00:00"  # type: ignore[union-attr]


@pytest.mark.parametrize("content, words", [
    (b"", "is empty"),
    (b"{\"schema_version\": 1, \"tasks\": [", "not valid JSON"),
    (b"[1, 2]", "not an agent-loop state file"),
    (b"{\"schema_version\": 1}", "damaged"),
    (b"{\"schema_version\": 99, \"tasks\": []}", r"newer agent-loop \(schema 99"),
])
def test_unreadable_state_is_one_clear_error_and_untouched(tmp_path: Path, content: bytes,
                                                            words: str) -> None:
    store = Store(tmp_path)
    store.dir.mkdir()
    store.state_path.write_bytes(content)
    with pytest.raises(StateError, match=words) as err:
        store.load()
    assert "\n" not in str(err.value)
    assert store.state_path.read_bytes() == content


def test_older_schema_is_upgraded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path)
    store.save(make_state())

    now = records.SCHEMA_VERSION

    def upgrade(data: dict) -> dict:
        for t in data["tasks"]:
            t["summary"] = t["summary"].upper()
        return {**data, "schema_version": now + 1}

    monkeypatch.setattr(records, "SCHEMA_VERSION", now + 1)
    monkeypatch.setitem(schema.UPGRADES, now, upgrade)
    loaded = store.load()
    assert loaded is not None and loaded.tasks[0].summary == "TASK 1"


def test_a_state_from_before_the_journal_loads(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.save(make_state())
    data = orjson.loads(store.state_path.read_bytes())
    del data["journal_id"]
    store.state_path.write_bytes(orjson.dumps({**data, "schema_version": 1}))
    store.journal.path.write_bytes(b"lines an old run could never have written\n")
    loaded = store.load()
    assert loaded is not None and loaded.schema_version == schema.SCHEMA_VERSION
    assert loaded.journal_id is None
    assert loaded.tasks == make_state().tasks


@pytest.mark.parametrize("where, value, words", [
    ((0, "cost_usd"), "a lot", "cost_usd is str 'a lot'"),
    ((2, "cost_usd"), "a lot", "cost_usd is str 'a lot'"),   # after two records that fit
    ((2, "files"), ["a.txt", 7], "files is list"),           # the same types, a list that does not
    ((2, "history", 0, "usage"), {"input_tokens": "5"}, "usage is dict"),
])
def test_every_record_is_checked_though_most_look_alike(tmp_path: Path, where: tuple,
                                                        value: object, words: str) -> None:
    store = Store(tmp_path)
    state = make_state()
    for task in state.tasks:
        task.history.append(Attempt(number=1, started_at="t", usage={"input_tokens": 5}))
    store.save(state)
    data = orjson.loads(store.state_path.read_bytes())
    record = data["tasks"]
    for key in where[:-1]:
        record = record[key]
    record[where[-1]] = value
    store.state_path.write_bytes(orjson.dumps(data))
    with pytest.raises(StateError, match=f"is damaged \\({words}"):
        store.load()


def test_a_record_in_another_order_or_short_of_fields_loads(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.save(make_state())
    data = orjson.loads(store.state_path.read_bytes())
    data["tasks"][1] = dict(reversed(data["tasks"][1].items()))
    del data["tasks"][2]["stalled_runs"]
    data["tasks"][2]["from_a_newer_writer"] = 1
    store.state_path.write_bytes(orjson.dumps(data))
    loaded = store.load()
    assert loaded is not None and loaded.tasks == make_state().tasks


def test_invalid_state_is_not_written(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.save(make_state())
    before = store.state_path.read_bytes()
    bad = make_state()
    bad.tasks[1].status = "exploded"
    with pytest.raises(StateError):
        store.save(bad)
    assert store.state_path.read_bytes() == before


WRITER = """
import sys
from agentloop.state.schema import State, TaskState
from agentloop.state.store import Store
store = Store(__import__('pathlib').Path(sys.argv[1]))
n = 0
while True:
    n += 1
    tasks = [TaskState(index=i, group='G' * 50, task=str(n) * 200, line=i, summary='s',
                       log_name='x') for i in range(1, 400)]
    store.save(State(task_file='tasks.md', task_file_hash='sha256:' + str(n), tasks=tasks))
"""


def kill_a_writer(script: str, folder: Path, rng: random.Random, after: float) -> None:
    """Run `script`, a writer that saves for ever, on `folder`, and SIGKILL it after `after`
    seconds and up to 0.3 more, at a moment `rng` picks."""
    child = subprocess.Popen([sys.executable, "-c", script, str(folder)])
    time.sleep(after + rng.random() * 0.3)
    child.send_signal(signal.SIGKILL)
    child.wait()


def test_a_writer_killed_mid_write_leaves_a_loadable_file(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.save(make_state())
    rng = random.Random(7)
    for _ in range(15):
        kill_a_writer(WRITER, tmp_path, rng, 0.3)
        loaded = store.load()
        assert loaded is not None and loaded.tasks
    leftovers = [p.name for p in store.dir.iterdir() if p.name.startswith(".state-")]
    assert len(leftovers) <= 15  # a killed writer may leave its temp file; never a torn state.json


HOLDER = """
import sys, time
from pathlib import Path
from agentloop.state.store import Store
with Store(Path(sys.argv[1])).lock():
    print('locked', flush=True)
    time.sleep(30)
"""


def test_second_run_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(StateLocked, match=f"pid {holder.pid}"):
            with Store(tmp_path).lock():
                pass
        assert time.monotonic() - started < 5  # refused at once, not after waiting
    finally:
        holder.kill()
        holder.wait()
    with Store(tmp_path).lock():  # a dead holder's lock is free again
        pass


def test_a_run_starting_as_dry_run_peeks_at_the_lock_is_not_refused(tmp_path: Path) -> None:
    """--dry-run's look at a free run lock takes it for an instant (agentloop.files.lock's
    is_held): a run starting in that instant, with run.pid naming a live process (a killed
    run's pid, reused), was refused, naming that pid, though no run worked."""
    import threading

    from agentloop.files.lock import try_lock

    store = Store(tmp_path)
    store.make_dir()
    (store.base / "run.pid").write_text(f"{os.getppid()}\n")  # alive, and no run of ours
    peek = try_lock(store.base / "run.lock")  # the look, caught in its instant
    assert peek is not None
    threading.Timer(0.05, os.close, (peek,)).start()
    with store.lock():
        assert (store.base / "run.pid").read_text() == f"{os.getpid()}\n"


def test_the_store_ignores_itself_and_comes_back_when_deleted(tmp_path: Path) -> None:
    import shutil

    store = Store(tmp_path)
    store.save(make_state())
    assert (store.base / ".gitignore").read_text() == "*\n"
    shutil.rmtree(store.base)  # an agent's `git clean -fdx`
    store.save(make_state())
    assert store.load() is not None and (store.base / ".gitignore").read_text() == "*\n"
    assert not (tmp_path / ".gitignore").exists()


def test_the_run_lock_lives_where_git_clean_cannot_reach(tmp_path: Path) -> None:
    import shutil

    (tmp_path / ".git").mkdir()
    store = Store(tmp_path)
    with store.lock():
        shutil.rmtree(store.base)  # the agent cleans the tree while the run holds the lock
        with pytest.raises(StateLocked, match=f"pid {os.getpid()}"):
            with Store(tmp_path).lock():
                pass
    assert (tmp_path / ".git" / "agent-loop.lock").exists()


LOCK_FILES = (".git/agent-loop.lock", ".agent-loop/run.lock")


def _rm_locks(work: Path) -> str:
    return "  FAKE: bash rm -f " + " ".join(str(work / f) for f in LOCK_FILES) + "\n"


def test_a_lock_file_the_agent_deletes_is_taken_back_before_the_next_task(
        tmp_path: Path, fake_claude: object) -> None:
    from tests.support.repos import git_project
    from tests.support.runner import agent_loop

    work = git_project(tmp_path, "")
    # Task 2's agent asks what a second run would: can it lock either file now?
    tries = " ; ".join(f"flock -n {work / f} true; echo $? >> {tmp_path / 'second.txt'}"
                       for f in LOCK_FILES)
    (work / "tasks.md").write_text(f"- one\n{_rm_locks(work)}  FAKE: write a.txt A\n"
                                   f"- two\n  FAKE: bash {tries}\n  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "second.txt").read_text().split() == ["1", "1"]  # both held again
    said = [line for line in (done.stdout + done.stderr).splitlines() if "locked again" in line]
    assert said == ["  .agent-loop/run.lock and .git/agent-loop.lock deleted while this run "
                    "worked: locked again, so no second run starts beside this one"], said


def test_a_run_whose_lock_another_run_took_stops_before_its_next_task(
        tmp_path: Path, fake_claude: object) -> None:
    from tests.support.repos import git_project
    from tests.support.runner import agent_loop

    work = git_project(tmp_path, "")
    deleted, go = tmp_path / "deleted", tmp_path / "go"
    (work / "tasks.md").write_text(
        f"- one\n{_rm_locks(work)}  FAKE: bash touch {deleted}; "
        f"while [ ! -e {go} ]; do sleep 0.02; done\n  FAKE: write a.txt A\n"
        "- two\n  FAKE: write b.txt B\n")
    first = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill"],
                             cwd=work, env={**os.environ, "NO_COLOR": "1"}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not deleted.exists():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    # Another run starts beside it: it takes both new lock files and writes its pid.
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, os\n"
        "from agentloop.state.store import Store\n"
        "store = Store(__import__('pathlib').Path(sys.argv[1]))\n"
        "with store.lock():\n"
        "    print('ready', flush=True)\n"
        "    sys.stdin.read()\n"), str(work)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        go.touch()
        out, err = first.communicate(timeout=60)
        assert first.returncode == 1, out + err
        assert f"another agent-loop run (pid {holder.pid}) took .agent-loop/run.lock while this " \
            "run worked" in err, err
        assert "Traceback" not in out + err
        assert not (work / "b.txt").exists()
    finally:
        holder.communicate("", timeout=30)
    status = agent_loop(work, "--status")
    # Task 1's landing ran beside the check that stopped the run, whose records the other run
    # writes from then on: it is completed, or still `landing` (the next run finds it landed).
    assert "1 completed, 1 pending" in status.stdout or \
        "1 landing, 1 pending" in status.stdout, status.stdout
    assert (work / "a.txt").read_text() == "A\n"


def test_archive_moves_state_and_logs(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.save(make_state())
    store.logs.mkdir()
    (store.logs / "001.log").write_text("log")
    first = store.archive("2026-01-01T00:00:00+00:00")
    assert first is not None and (first / "state.json").exists()
    assert (first / "logs" / "001.log").read_text() == "log"
    assert store.load() is None and not store.logs.exists()
    assert store.archive("2026-01-01T00:00:00+00:00") is None
    store.save(make_state())
    second = store.archive("2026-01-01T00:00:00+00:00")
    assert second is not None and second != first


def test_log_paths(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert store.log_path("001-g--t").name == "001-g--t.log"
    assert store.log_path("001-g--t", 2).name == "001-g--t-attempt2.log"
    assert os.sep not in store.relative(store.log_path("x"))[len(".agent-loop/logs/"):]


def test_a_run_that_lost_its_lock_refuses_every_later_task_and_writes_no_state(
        tmp_path: Path) -> None:
    # With lanes, a second lane may ask to start after the first was refused; and a task of
    # the lost run still landing must not write over the state the other run now owns.
    (tmp_path / ".git").mkdir()
    first, second = Store(tmp_path), Store(tmp_path)
    with first.lock():
        first.save(make_state())
        for lock in (tmp_path / ".agent-loop" / "run.lock", tmp_path / ".git" / "agent-loop.lock"):
            lock.unlink()
        with second.lock():
            theirs = make_state(5)
            second.snapshot(theirs)
            with pytest.raises(StateLocked):
                first.keep_lock()
            with pytest.raises(StateLocked):
                first.keep_lock()
            first.save(make_state(), make_state().tasks[0])
            first.snapshot(make_state())
            loaded = second.load()
            assert loaded is not None and len(loaded.tasks) == 5
def test_a_plan_s_state_is_parsed_once_to_find_its_folder_and_load_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tasks.md").write_text("- one\n- two\n")
    project = open_project(Path("tasks.md"), tmp_path)
    state, _ = load_state(project)
    project.store.snapshot(state, final=True)
    parsed = []
    real = orjson.loads
    monkeypatch.setattr(orjson, "loads", lambda raw: parsed.append(raw) or real(raw))
    again = open_project(Path("tasks.md"), tmp_path)
    assert again.store.dir == project.store.dir and again.store.load() == state
    assert len(parsed) == 1
    # Changed since its folder was found: what the file holds now is what is read.
    state.tasks[0].status = TaskStatus.COMPLETED
    project.store.snapshot(state, final=True)
    loaded = open_project(Path("tasks.md"), tmp_path).store
    state.tasks[1].status = TaskStatus.FAILED
    project.store.snapshot(state, final=True)
    assert loaded.load() == state and len(parsed) == 3


@pytest.mark.parametrize("args", [("--status",), ("--dry-run",), ()])
def test_a_state_file_that_is_a_named_pipe_is_one_clear_line_not_a_hang(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    # A FIFO in state.json's place: a plain read waits for a writer that never comes.
    from tests.support.repos import make_repo
    from tests.support.runner import agent_loop

    work = make_repo(tmp_path / "project", plan="- [ ] one\n- [ ] two\n")
    (work / ".agent-loop").mkdir()
    os.mkfifo(work / ".agent-loop" / "state.json")
    done = agent_loop(work, *args, timeout=20)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "state.json is not a regular file" in lines[0]
    assert (work / ".agent-loop" / "state.json").is_fifo()


@pytest.mark.parametrize("damage", ["fifo", "truncated"])
def test_status_of_every_plan_lists_an_unreadable_state_as_unreadable(
        tmp_path: Path, damage: str) -> None:
    # A named pipe in state.json's place is listed as a truncated state is: "cannot read", not
    # hidden behind "no plan has run here yet".
    from tests.support.repos import make_repo
    from tests.support.runner import agent_loop

    work = make_repo(tmp_path / "project", plan="- [ ] one\n- [ ] two\n")
    (work / ".agent-loop").mkdir()
    if damage == "fifo":
        os.mkfifo(work / ".agent-loop" / "state.json")
    else:
        (work / ".agent-loop" / "state.json").write_bytes(b'{"schema_version": 1, "tasks": [')
    done = agent_loop(work, "--status", plan=None, timeout=20)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and len(lines) == 1, (done.stdout, done.stderr)
    assert lines[0].startswith(".agent-loop/: cannot read: "), lines
    assert "no plan has run" not in done.stdout


def test_records_removed_twice_within_a_second_are_both_kept(tmp_path: Path) -> None:
    # A run's end keeps the records its plan's edit removed (agentloop.run.loop._plan_taken),
    # and the next run's start those of an edit made after: both within one second, named by
    # the same stamp. The second must not write over the first, whose path the first run
    # already named to the user.
    store = Store(tmp_path)
    one, two = make_state(2).tasks
    first = store.keep_removed([one], "2026-03-04T05:06:07+00:00")
    second = store.keep_removed([two], "2026-03-04T05:06:07+00:00")
    assert first != second
    assert [r["summary"] for r in orjson.loads(first.read_bytes())] == ["task 1"]
    assert [r["summary"] for r in orjson.loads(second.read_bytes())] == ["task 2"]
