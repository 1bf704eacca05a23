"""The `.agent-loop/` store: state.json (versioned, orjson, atomic replace) and its journal, the
run lock (agentloop.state.runlock) held for a run, logs.

A crash at any instant leaves the old or the new state.json, never a torn one: we write a
temporary file in the same folder, fsync it, and `os.replace` it over the old one. Between two
such snapshots, saves of one task's record are lines of the journal (agentloop.journal); a run
that ends folds them into state.json. The records themselves and how they are read back live in
agentloop.state.schema.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import orjson

from agentloop.errors import StateError
from agentloop.files import jsonbytes, listing, regular
from agentloop.state import journal, plain
from agentloop.state.runlock import RunLock
from agentloop.state.schema import State, TaskState, from_json, loads, now

DIRNAME = ".agent-loop"


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
        # One run at a time per repository.
        self.runlock = RunLock(root, self.base, self.dir)

    def load(self) -> State | None:
        """The saved state, or None when there is none yet. Takes no lock: writes are atomic."""
        try:
            raw = regular.read_bytes(self.state_path)
        except FileNotFoundError:
            return None
        except regular.NotRegular:
            raise StateError(f"{self.state_path} is not a regular file (a named pipe, a device "
                             "or a socket); move it aside") from None
        except OSError as exc:
            raise StateError(f"cannot read {self.state_path}: {exc.strerror}") from None
        if not raw.strip():
            raise StateError(f"{self.state_path} is empty; move it aside or run with --reset")
        read, self._read = self._read, None
        data = read[1] if read is not None and read[0] == raw else loads(raw, self.state_path)
        state = from_json(data, self.state_path)
        if state.journal_id is not None:
            try:
                journal.apply(state, regular.read_bytes(self.journal.path))
            except FileNotFoundError:
                pass
        return state

    def holds(self, digest: str, reader: int) -> bool:
        """Whether the saved state was made from the task file whose hash is `digest`, read by
        `reader`: a glance at the snapshot's top, so a run of an unchanged plan never parses
        it (load() reads the state in full, and says what is wrong with a damaged one)."""
        try:
            data = orjson.loads(regular.read_bytes(self.state_path))
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
        if self.runlock.lost:  # the other run's state now: a task of ours still landing is found
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
        if self.runlock.lost:  # see save
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
        from agentloop.files.scratch import scratch  # the writes': --status only reads

        data = state.to_bytes()
        self.make_dir()
        try:
            fd, tmp = scratch(self.dir, ".state-", ".tmp")
        except OSError as exc:
            raise self._cannot_write(self.state_path, exc) from None
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # made 0600; give it a normal file's mode
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
        """Hold the run lock; a second run fails at once, naming the holder's pid. At its end
        the journal goes into state.json, unless another run took the lock meanwhile."""
        self.make_dir()
        try:
            self.runlock.take()
            for name in listing.names(self.dir):  # left by a writer that was killed
                if name.startswith(".state-") and name.endswith(".tmp"):
                    (self.dir / name).unlink(missing_ok=True)
            yield
        finally:
            if not self.runlock.lost:  # else state.json is the other run's to write
                self._fold_journal()
                self._follow_rename()
            self.runlock.release()

    def _follow_rename(self) -> None:
        """The run ends, its plan renamed while it worked (agentloop.run.plan_kept saved the
        state under the new name): the plan's own folder goes to the new name's, under the lock,
        so that a new plan by the old name starts afresh rather than take this state, and the
        new name finds its state where `--status` looks first. The first plan's `.agent-loop/`
        stays (plain.plan_folder tells by the name in it), as does a plan renamed over one
        that has a state (agentloop.state.project archives that one at the next run)."""
        name = self._top.get("task_file")
        if not isinstance(name, str) or not name or self.dir.parent != self.base / "plans":
            return
        target = plain.own_folder(self.root, self.root / name)
        if target == self.dir or target.exists() or \
                (plain.plan_folder(self.root, self.root / name, loads)[0] / "state.json").exists():
            return
        try:
            os.rename(self.dir, target)
        except OSError:
            return   # the next run by the new name takes it over (agentloop.state.project)
        self._at(target)

    def _at(self, folder: Path) -> None:
        self.dir = folder
        self.state_path = folder / "state.json"
        self.logs = folder / "logs"
        self.events = folder / "events.jsonl"
        self.journal = journal.Journal(folder / "state.journal")
        self.runlock.plan_dir = folder

    def _fold_journal(self) -> None:
        """The run ends: its journal goes into state.json, which then says everything alone."""
        if not self.journal.started:
            return
        if not self.journal.lines:
            # Nothing since the last snapshot (the run's last save was one): state.json says
            # everything already, and a snapshot naming a journal that is not there is whole
            # (load), so the empty journal just goes, with no second read and write of it all.
            try:
                self.journal.remove()
            except OSError:
                self.journal.close()
            return
        try:
            state = self.load()
            if state is not None:
                self.snapshot(state, final=True)
        except (StateError, OSError):
            self.journal.close()  # state.json and the journal still say it all together

    def hold_vcs_lock(self) -> None:
        """Take the run lock in `.git/` or `.jj/` too, once there is one (RunLock.hold_vcs)."""
        self.runlock.hold_vcs()

    def keep_lock(self) -> list[Path]:
        """Between tasks: the lock files taken again after they were deleted (RunLock.keep)."""
        return self.runlock.keep()

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

        name = f"removed-{stamp.replace(':', '')}"
        target = self.dir / "archive" / f"{name}.json"
        # A run's end keeps what its plan's edit removed, and the next run's start what an
        # edit after that removed, maybe within the same second: the first file, which its
        # run named to the user, is not written over.
        n = 1
        while target.exists():
            n += 1
            target = target.with_name(f"{name}-{n}.json")
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
