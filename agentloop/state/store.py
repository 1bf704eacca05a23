"""The `.agent-loop/` store: state.json (versioned, orjson, atomic replace) and its journal, the
run lock, logs.

A crash at any instant leaves the old or the new state.json, never a torn one: we write a
temporary file in the same folder, fsync it, and `os.replace` it over the old one. Between two
such snapshots, saves of one task's record are lines of the journal (agentloop.journal); a run
that ends folds them into state.json. The records themselves and how they are read back live in
agentloop.state.schema.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from agentloop.errors import StateError, StateLocked
from agentloop.files import jsonbytes
from agentloop.files.lock import try_lock
from agentloop.files.pid_file import live_pid
from agentloop.state import journal, plain
from agentloop.state.schema import State, TaskState, from_json, loads, now

DIRNAME = ".agent-loop"
# A run that loses the race for the lock waits this long at most for the winner's pid to show.
HOLDER_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class _Held:
    """A lock this run holds: its descriptor, its file, the file's identity then, its pid file."""

    fd: int
    path: Path
    inode: tuple[int, int]   # (st_dev, st_ino) of the file locked
    pid_path: Path


def _inode(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _inode_of(path: Path) -> tuple[int, int] | None:
    """The identity of the file at `path`, or None when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


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

    def __init__(self, root: Path, folder: Path | None = None,
                 read: tuple[bytes, Any] | None = None) -> None:
        self.root = root
        self.base = root / DIRNAME           # the repository's: its .gitignore, the run lock
        self.dir = folder or self.base       # this plan's: state, logs, events, learnings
        self.state_path = self.dir / "state.json"
        self.logs = self.dir / "logs"
        self.events = self.dir / "events.jsonl"
        self.journal = journal.Journal(self.dir / "state.journal")
        # state.json as read to find this plan's folder (agentloop.state.project): its bytes and
        # their JSON, which the first load() takes while the file still holds those bytes.
        self._read = read
        self._top: dict[str, Any] = {}       # the top-level fields as last written
        self._snapshot_tasks = -1             # how many tasks the last snapshot held
        # One run at a time per repository: the locks held, each with its pid file.
        self._held: list[_Held] = []
        self._lost = False   # another run took a lock while this one worked: it writes now

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
        read, self._read = self._read, None
        data = read[1] if read is not None and read[0] == raw else loads(raw, self.state_path)
        state = from_json(data, self.state_path)
        if state.journal_id is not None:
            try:
                journal.apply(state, self.journal.path.read_bytes())
            except FileNotFoundError:
                pass
        return state

    def holds(self, digest: str, reader: int) -> bool:
        """Whether the saved state was made from the task file whose hash is `digest`, read by
        `reader`: a glance at the snapshot's top, so a run of an unchanged plan never parses
        it (load() reads the state in full, and says what is wrong with a damaged one)."""
        try:
            data = orjson.loads(self.state_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return False
        return isinstance(data, dict) and data.get("task_file_hash") == digest and \
            data.get("reader") == reader

    def save(self, state: State, task: TaskState | None = None) -> None:
        """Save the state: `task`'s record as a journal line when only it changed (besides
        top-level fields), else a snapshot of the whole state.

        A failed write (disk full, read-only folder) leaves the saved state as it was and
        raises StateError.
        """
        if self._lost:  # the other run's state now: a task of ours still landing is found
            return      # by its commit's trailers, never written over that run's records
        state.updated_at = now()
        if task is not None and self._journal_fits(state):
            line = journal.entry(state.journal_id or "", task,
                                 journal.changed_top(state, self._top))
            try:
                if self.journal.append(line):
                    return
            except OSError as exc:
                raise self._cannot_write(self.journal.path, exc) from None
        self.snapshot(state)

    def _journal_fits(self, state: State) -> bool:
        # A snapshot now and then keeps the journal short to read: each costs about as much
        # as the lines since the last one, so a task's saves stay the same price at any size.
        return (state.journal_id is not None and len(state.tasks) == self._snapshot_tasks
                and self.journal.lines < max(64, len(state.tasks)))

    def snapshot(self, state: State, final: bool = False) -> None:
        """Write the whole state to state.json atomically (temp file in the same folder,
        fsync, os.replace) and start its journal afresh; `final`: with no journal after it."""
        if self._lost:  # see save
            return
        journal_id = None if final else os.urandom(8).hex()
        previous, state.journal_id = state.journal_id, journal_id
        try:
            self._write_snapshot(state)
        except BaseException:
            state.journal_id = previous
            raise
        self._top, self._snapshot_tasks = journal.written_top(state), len(state.tasks)
        try:
            if final:
                self.journal.remove()
            else:
                self.journal.start()
        except OSError as exc:
            # The snapshot stands; without a journal every save is a snapshot.
            state.journal_id = None
            raise self._cannot_write(self.journal.path, exc) from None

    def _write_snapshot(self, state: State) -> None:
        import tempfile  # imported by the writes: --status only reads

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
        # The folder is not synced: after a power cut the old state.json may be back, as if
        # the run had been killed a moment earlier, which a run is built to survive; a sync
        # per save was a tenth of the time the git path spends on a task.

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run lock; a second run fails at once, naming the holder's pid.

        Two locks: `.agent-loop/run.lock`, which every run takes first, and one in the VCS's own
        folder (see hold_vcs_lock), since an agent's `git clean -fdx` deletes `.agent-loop/`
        and the lock file in it, never `.git/`.
        """
        self.make_dir()
        try:
            self._take(self.base / "run.lock", self.base / "run.pid")
            self.hold_vcs_lock()
            for stale in self.dir.glob(".state-*.tmp"):  # left by a writer that was killed
                stale.unlink(missing_ok=True)
            yield
        finally:
            if not self._lost:  # else state.json is the other run's to write
                self._fold_journal()
            while self._held:
                held = self._held.pop()
                try:
                    held.pid_path.unlink(missing_ok=True)
                except OSError:
                    pass  # the lock is what counts, and it goes with us; a stale pid is never shown
                os.close(held.fd)  # and the lock with it

    def _fold_journal(self) -> None:
        """The run ends: its journal goes into state.json, which then says everything alone."""
        if not self.journal.started:
            return
        try:
            state = self.load()
            if state is not None:
                self.snapshot(state, final=True)
        except (StateError, OSError):
            self.journal.close()  # state.json and the journal still say it all together

    def hold_vcs_lock(self) -> None:
        """Take the lock in `.git/` or `.jj/` too, once there is one (a run that made the
        repository itself takes it then)."""
        vcs_dir = next((d for d in (self.root / ".git", self.root / ".jj") if d.is_dir()), None)
        if vcs_dir is not None and all(h.path.parent != vcs_dir for h in self._held):
            self._take(vcs_dir / "agent-loop.lock", vcs_dir / "agent-loop.pid")

    def _take(self, lock_path: Path, pid_path: Path) -> None:
        try:
            lock = try_lock(lock_path)
        except OSError as exc:
            raise self._cannot_write(lock_path, exc) from None
        if lock is None:
            raise StateLocked(f"another agent-loop run holds {self.root} (pid "
                              f"{self._holder(pid_path)}); wait for it or stop it first")
        self._held.append(_Held(lock, lock_path, _inode(lock), pid_path))
        try:
            # Atomic, so a run that lost the race never reads it empty or half written.
            _write_atomic(pid_path, f"{os.getpid()}\n")
        except OSError as exc:
            raise self._cannot_write(pid_path, exc) from None

    def keep_lock(self) -> list[Path]:
        """Between tasks: whether each lock file is still the one this run locked (one stat
        each, no process). One deleted or replaced (an agent's `rm`, a `git clean -fdx`) and
        held by nobody is taken again: its path is returned. StateLocked when another run
        holds it now: that run writes the state from here on, this one stops."""
        if self._lost:  # said once; every later lane asking to start is refused too
            raise StateLocked("another agent-loop run took this plan's lock while this run "
                              "worked: this run stops before its next task")
        taken, lost = [], []
        for i, held in enumerate(self._held):
            try:
                if _inode_of(held.path) == held.inode:
                    continue
                if held.path.parent == self.base:  # never a deleted .git: git would look
                    self.base.mkdir(parents=True, exist_ok=True)  # upward for another one
                fd = try_lock(held.path)
            except OSError:
                continue  # cannot look or lock: the run goes on as it would have before
            if fd is None:
                lost.append(held)
                continue
            os.close(held.fd)
            self._held[i] = _Held(fd, held.path, _inode(fd), held.pid_path)
            try:
                _write_atomic(held.pid_path, f"{os.getpid()}\n")
            except OSError:
                pass  # the lock is what counts; a second run then says "pid unknown"
            taken.append(held.path)
        if lost:
            self._lost = True
            for held in lost:  # its pid file is the other run's now: never unlinked by us
                self._held.remove(held)
                os.close(held.fd)
            raise StateLocked(
                f"another agent-loop run (pid {self._holder(lost[0].pid_path)}) took "
                f"{self.relative(lost[0].path)} while this run worked (its lock file was "
                f"deleted): this run stops before its next task, its state saved; let that run "
                f"finish")
        return taken

    def _holder(self, pid_path: Path) -> str:
        """The lock holder's pid from its pid file, once that names a live process.

        The holder writes its pid just after it takes the lock, so a run started at the same
        instant may find no file yet, or the pid a killed run left there: it waits a moment.
        """
        deadline = time.monotonic() + HOLDER_WAIT_SECONDS
        while True:
            pid = live_pid(pid_path)
            if pid is not None:
                return str(pid)
            if time.monotonic() > deadline:
                return "unknown"
            time.sleep(0.01)

    def _cannot_write(self, path: Path, exc: OSError) -> StateError:
        reason = exc.strerror or str(exc)
        return StateError(f"cannot write {path}: {reason}; the saved state is as it was"
                          if path in (self.state_path, self.journal.path)
                          else f"cannot write {path}: {reason}")

    def make_dir(self) -> None:
        """Create `.agent-loop/` (ignored by git and jj from its first instant: its own
        .gitignore holds `*`) and this plan's folder in it; again if the agent deleted them."""
        for folder in (self.base, self.dir):
            if folder.exists() and not folder.is_dir():
                raise StateError(f"{folder} exists and is not a folder; move it aside")
        inner = self.base / ".gitignore"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not inner.exists():
                inner.write_text("*\n")
        except OSError as exc:
            raise self._cannot_write(inner, exc) from None

    def keep_removed(self, records: list[TaskState], stamp: str) -> Path:
        """Keep the records of tasks the plan no longer has, in archive/removed-<stamp>.json."""
        import orjson

        target = self.dir / "archive" / f"removed-{stamp.replace(':', '')}.json"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(jsonbytes.dumps(records, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            raise self._cannot_write(target, exc) from None
        return target

    def archive(self, stamp: str) -> Path | None:
        """Move state.json, logs/ and events.jsonl to archive/<stamp>/ (for --reset)."""
        present = [p for p in (self.state_path, self.journal.path, self.logs, self.events)
                   if p.exists()]
        if not present:
            return None
        target = self.dir / "archive" / stamp.replace(":", "")
        n = 1
        while target.exists():
            n += 1
            target = target.with_name(f"{stamp.replace(':', '')}-{n}")
        import shutil

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
        return plain.relative(path, self.root)
