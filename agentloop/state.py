"""The `.agent-loop/` store: state.json (versioned, orjson, atomic replace), the run lock, logs.

A crash at any instant leaves the old or the new state.json, never a torn one: we write a
temporary file in the same folder, fsync it, and `os.replace` it over the old one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import UnionType
from typing import Any, Callable, Iterator, Union, get_args, get_origin, get_type_hints

import orjson
from contextlib import contextmanager

from agentloop.errors import StateError, StateLocked
from agentloop.taskfile import Task

SCHEMA_VERSION = 1
DIRNAME = ".agent-loop"
# A run that loses the race for the lock waits this long at most for the winner's pid to show.
HOLDER_WAIT_SECONDS = 2.0
STATUSES = ("pending", "running", "completed", "failed", "interrupted", "skipped", "blocked",
            "unapproved")


def now() -> str:
    """The current UTC time as an ISO 8601 string (frozen in tests by freezegun)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class Attempt:
    """One run of the agent for a task."""

    number: int
    started_at: str
    finished_at: str | None = None
    # running | completed | failed | interrupted | limited | blocked | continued (an iteration
    # that went on) | stopped (the agent reported a fatal error)
    outcome: str = "running"
    iteration: int = 1
    reason: str | None = None
    hint: str | None = None
    log: str | None = None
    session_id: str | None = None
    resumed: bool = False
    change_id: str | None = None
    commit_id: str | None = None
    cost_usd: float = 0.0
    # The CLI's total_cost_usd, which adds up over a resumed session; cost_usd is this run's part.
    session_cost_usd: float = 0.0
    # Likewise the session's running token totals after this run, for agents that report those.
    session_usage: dict[str, int] = field(default_factory=dict)
    # False when the agent reports tokens but no dollars: its cost_usd is not a price.
    cost_known: bool = True
    # What the small calls about this attempt cost: the retry advisor, the commit distiller.
    helper_cost_usd: float = 0.0
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    num_turns: int | None = None
    duration_ms: int | None = None
    exit_code: int | None = None
    # With --review (agentloop.review): who ran, in which review round (0: the attempt's own
    # runs), and what the reviewer said ("approved" or "feedback"; its feedback is `reason`).
    role: str = "developer"
    round: int = 0
    verdict: str | None = None
    # The user's checks that ran after this run (agentloop.checks.record): command, exit_code,
    # seconds, log, round, timed_out.
    checks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TaskState:
    """A task as the state records it: what the file said, and what happened to it."""

    index: int
    group: str
    task: str
    line: int
    summary: str
    log_name: str
    status: str = "pending"
    session_id: str | None = None
    change_id: str | None = None
    commit_id: str | None = None
    files: list[str] = field(default_factory=list)
    log: str | None = None
    attempts: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    cost_usd: float = 0.0
    error: str | None = None
    # Runs of the tool in a row in which this task started but did not complete.
    stalled_runs: int = 0
    # The reviewer's last feedback, for a task left `unapproved` when the review rounds ran out.
    feedback: str | None = None
    # The checks the plan declares for this task (its file's and its group's), kept with the
    # task so an unchanged file is not parsed again; --check's are added at run time.
    checks: list[str] = field(default_factory=list)
    history: list[Attempt] = field(default_factory=list)

    @classmethod
    def from_task(cls, task: Task) -> "TaskState":
        """A fresh, pending record for a parsed task (`[x]` items start as skipped)."""
        return cls(index=task.index, group=task.group, task=task.text, line=task.line,
                   summary=task.summary, log_name=task.log_name,
                   status="skipped" if task.checked else "pending",
                   checks=list(getattr(task, "checks", ())))  # when the plan format has them


@dataclass
class State:
    """Everything agent-loop remembers about one task file."""

    task_file: str
    task_file_hash: str
    tasks: list[TaskState]
    schema_version: int = SCHEMA_VERSION
    started_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    vcs: str | None = None
    agent: str | None = None
    # The plan's own context: the text before its first group (goal, architecture, ...).
    context: str | None = None

    def to_bytes(self) -> bytes:
        """Serialize, checking first that what we write is something we can read back."""
        _validate(self)
        # orjson serializes dataclasses natively, far faster than dataclasses.asdict.
        return orjson.dumps(self, option=orjson.OPT_INDENT_2)


def _validate(state: State) -> None:
    problem = _problem(state)
    if problem:
        raise StateError(f"internal error: {problem}")


def _problem(state: State) -> str | None:
    for i, t in enumerate(state.tasks, 1):
        if t.index != i:
            return f"task {t.index} recorded at position {i}"
        if t.status not in STATUSES:
            return f"task {t.index} has unknown status {t.status!r}"
    return None


_CHECKS: dict[type, dict[str, Callable[[Any], bool]]] = {}


def _known(cls: type, data: Any) -> dict[str, Any]:
    """The fields of `cls` in `data`, each of its declared type; TypeError names a bad one."""
    if type(data) is not dict:
        raise TypeError(f"{cls.__name__.lower()} record is {type(data).__name__}, not an object")
    checks = _CHECKS.get(cls)
    if checks is None:
        checks = _CHECKS[cls] = {name: _checker(hint) for name, hint in get_type_hints(cls).items()}
    known = {}
    # Unknown keys (from a newer minor writer, or hand edits) are dropped rather than fatal.
    for name, value in data.items():
        check = checks.get(name)
        if check is not None:
            if not check(value):
                raise TypeError(f"{name} is {type(value).__name__} {str(value)[:40]!r}")
            known[name] = value
    return known


def _checker(hint: Any) -> Callable[[Any], bool]:
    """A fast test of whether a JSON value fits a field's type, made once per field."""
    simple = _types(hint)
    if simple is not None:
        return lambda v: type(v) in simple
    args = get_args(hint)
    if get_origin(hint) is list:
        if args[0] in (TaskState, Attempt):
            return lambda v: type(v) is list  # records: checked one by one as they are built
        item = _checker(args[0])
        return lambda v: type(v) is list and all(item(x) for x in v)
    if get_origin(hint) is dict:
        value = _checker(args[1])
        return lambda v: type(v) is dict and all(value(x) for x in v.values())
    return lambda v: True  # Any


def _types(hint: Any) -> frozenset[type] | None:
    """The JSON value types a scalar field (str, int, float, bool, or X | None) takes."""
    if get_origin(hint) in (Union, UnionType):
        allowed: set[type] = set()
        for part in map(_types, get_args(hint)):
            if part is None:
                return None
            allowed |= part
        return frozenset(allowed)
    if hint is float:
        return frozenset({float, int})
    if hint in (str, int, bool, type(None)):
        return frozenset({hint})
    return None


# Each entry upgrades a state dict from version N to N+1. Version 1 is the first; the chain
# grows here as the schema changes, so old state files keep loading.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def from_bytes(raw: bytes, where: Path) -> State:
    """Parse state.json, upgrading old schemas and refusing newer ones with a clear message."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise StateError(f"{where} is not valid JSON ({exc}); move it aside or run with --reset") from None
    if not isinstance(data, dict) or not isinstance(data.get("schema_version"), int):
        raise StateError(f"{where} is not an agent-loop state file; move it aside or run with --reset")
    version = data["schema_version"]
    if version > SCHEMA_VERSION:
        raise StateError(f"{where} was written by a newer agent-loop (schema {version}, this one "
                         f"reads up to {SCHEMA_VERSION}); upgrade agent-loop or run with --reset")
    while version < SCHEMA_VERSION:
        if version not in UPGRADES:
            raise StateError(f"{where} has schema {version}, which this agent-loop cannot upgrade; "
                             "run with --reset")
        data = UPGRADES[version](data)
        version = data["schema_version"]
    try:
        tasks = []
        for t in _known(State, data)["tasks"]:
            record = _known(TaskState, t)
            history = [Attempt(**_known(Attempt, a)) for a in record.get("history", [])]
            tasks.append(TaskState(**{**record, "history": history}))
        state = State(**{**_known(State, data), "tasks": tasks})
    except (KeyError, TypeError) as exc:
        raise StateError(f"{where} is damaged ({exc}); move it aside or run with --reset") from None
    problem = _problem(state)
    if problem:
        raise StateError(f"{where} is damaged ({problem}); move it aside or run with --reset")
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    return True


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Store:
    """The `.agent-loop/` folder of one project."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / DIRNAME
        self.state_path = self.dir / "state.json"
        self.logs = self.dir / "logs"
        self.events = self.dir / "events.jsonl"
        self._lock_path = self.dir / "run.lock"
        self._pid_path = self.dir / "run.pid"

    def load(self) -> State | None:
        """The saved state, or None when there is none yet. Takes no lock: writes are atomic."""
        try:
            raw = self.state_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(f"cannot read {self.state_path}: {exc.strerror}") from None
        if not raw.strip():
            raise StateError(f"{self.state_path} is empty; move it aside or run with --reset")
        return from_bytes(raw, self.state_path)

    def save(self, state: State) -> None:
        """Write state.json atomically: temp file in the same folder, fsync, os.replace.

        A failed write (disk full, read-only folder) leaves the old state.json as it was and
        raises StateError.
        """
        state.updated_at = now()
        data = state.to_bytes()
        self.make_dir()
        try:
            fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=self.dir)
        except OSError as exc:
            raise self._cannot_write(self.state_path, exc) from None
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give it a normal file's mode
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.state_path)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise self._cannot_write(self.state_path, exc) from None
            raise
        # The rename is durable only once the folder itself is synced.
        try:
            dir_fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise StateError(f"cannot sync {self.dir} after writing state.json: "
                             f"{exc.strerror or exc}") from None

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run lock; a second run fails at once, naming the holder's pid."""
        from filelock import FileLock, Timeout  # only runs need it; keeps --status start-up light

        self.make_dir()
        lock = FileLock(str(self._lock_path), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise StateLocked(f"another agent-loop run holds {self.dir} (pid {self._holder()}); "
                              "wait for it or stop it first") from None
        except OSError as exc:
            raise self._cannot_write(self._lock_path, exc) from None
        try:
            try:
                # Atomic, so a run that lost the race never reads it empty or half written.
                _write_atomic(self._pid_path, f"{os.getpid()}\n")
            except OSError as exc:
                raise self._cannot_write(self._pid_path, exc) from None
            for stale in self.dir.glob(".state-*.tmp"):  # left by a writer that was killed
                stale.unlink(missing_ok=True)
            yield
        finally:
            try:
                self._pid_path.unlink(missing_ok=True)
            except OSError:
                pass  # the lock is what counts, and it goes with us; a stale pid is never shown
            lock.release()

    def _holder(self) -> str:
        """The lock holder's pid from run.pid, once that names a live process.

        The holder writes its pid just after it takes the lock, so a run started at the same
        instant may find no file yet, or the pid a killed run left there: it waits a moment.
        """
        deadline = time.monotonic() + HOLDER_WAIT_SECONDS
        while True:
            try:
                text = self._pid_path.read_text().strip()
            except OSError:
                text = ""
            if text.isdigit() and _alive(int(text)):
                return text
            if time.monotonic() > deadline:
                return "unknown"
            time.sleep(0.01)

    def _cannot_write(self, path: Path, exc: OSError) -> StateError:
        reason = exc.strerror or str(exc)
        return StateError(f"cannot write {path}: {reason}; the saved state is as it was"
                          if path == self.state_path else f"cannot write {path}: {reason}")

    def make_dir(self) -> None:
        """Create `.agent-loop/`, ignored by git and jj from its first instant."""
        if self.dir.exists() and not self.dir.is_dir():
            raise StateError(f"{self.dir} exists and is not a folder; move it aside")
        inner = self.dir / ".gitignore"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not inner.exists():
                inner.write_text("*\n")
        except OSError as exc:
            raise self._cannot_write(inner, exc) from None

    def ensure_ignored(self) -> bool:
        """Keep `.agent-loop/` out of version control; return True if .gitignore was changed."""
        self.make_dir()
        gitignore = self.root / ".gitignore"
        try:
            data = gitignore.read_bytes()  # bytes: a .gitignore need not be UTF-8
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise StateError(f"cannot read {gitignore}: {exc.strerror or exc}") from None
        entries = {line.strip() for line in data.splitlines()}
        if entries & {p.encode() for p in (DIRNAME, DIRNAME + "/", "/" + DIRNAME, "/" + DIRNAME + "/")}:
            return False
        if data and not data.endswith(b"\n"):
            data += b"\n"
        try:
            gitignore.write_bytes(data + DIRNAME.encode() + b"/\n")
        except OSError as exc:
            raise self._cannot_write(gitignore, exc) from None
        return True

    def archive(self, stamp: str) -> Path | None:
        """Move state.json, logs/ and events.jsonl to archive/<stamp>/ (for --reset)."""
        present = [p for p in (self.state_path, self.logs, self.events) if p.exists()]
        if not present:
            return None
        target = self.dir / "archive" / stamp.replace(":", "")
        n = 1
        while target.exists():
            n += 1
            target = target.with_name(f"{stamp.replace(':', '')}-{n}")
        try:
            target.mkdir(parents=True)
            for p in present:
                shutil.move(str(p), target / p.name)
        except OSError as exc:
            raise self._cannot_write(target, exc) from None
        return target

    def log_path(self, log_name: str, attempt: int = 1, iteration: int = 1) -> Path:
        """The log of one run: NNN-group--task.log, then -attempt2.log, -attempt2-iter3.log."""
        suffix = ("" if attempt == 1 else f"-attempt{attempt}") + \
            ("" if iteration == 1 else f"-iter{iteration}")
        return self.logs / f"{log_name}{suffix}.log"

    def relative(self, path: Path) -> str:
        """A path as shown to the user and kept in the state: relative to the project root."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)
