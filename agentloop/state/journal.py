"""The state's journal: between two snapshots of state.json, each save of one task's record is a
line appended to `state.journal`, and reading the state is the snapshot with its lines applied.

Why: a task is saved three times or more (its attempt opens, its agent ends, it completes), and
rewriting the whole state.json each time costs a temp file, a rename and an fsync, and grows with
the plan: at a thousand tasks it was most of what agent-loop added to a task. A line costs one
write() of one record, whatever the plan's size.

Safety rests on two things. Each snapshot names its journal (`State.journal_id`), and every line
names the snapshot it belongs on, so lines a newer snapshot already holds are never applied twice,
and a state.json put in place by hand never meets an old journal. A line is one write() of a
whole record ending in a newline: a run killed mid-write leaves at most a torn last line, which is
not read, so the state is as it was one save earlier, as if the run had been killed a moment
sooner (a run is built to survive that, the change itself being in the VCS's own records).
"""

from __future__ import annotations

import errno
import os
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from agentloop.files import jsonbytes
from agentloop.files.held_open import gone, identity
from agentloop.state.plain import JOURNAL_TOP as TOP
from agentloop.state.plain import journal_lines
from agentloop.state.schema import STATUSES, State, TaskState, task_from_dict, top_from_dict


def entry(snapshot: str, task: TaskState, top: dict[str, Any]) -> bytes:
    """One journal line: `task`'s whole record, and the top-level fields that changed (`top`)."""
    return jsonbytes.dumps({"snapshot": snapshot, "task": task, "top": top}) + b"\n"


def changed_top(state: State, written: dict[str, Any]) -> dict[str, Any]:
    """The top-level fields whose value differs from what was last written; `written` is
    brought up to date."""
    changed = {}
    for name, value in zip(TOP, _VALUES(state)):  # every field read in one call, at each save
        if written.get(name, _UNSET) != value:
            changed[name] = value
            written[name] = _copy(value)
    return changed


def written_top(state: State) -> dict[str, Any]:
    """What a snapshot wrote of the top-level fields, to compare later saves with."""
    return {name: _copy(value) for name, value in zip(TOP, _VALUES(state))}


_UNSET = object()
_VALUES = attrgetter(*TOP)


def _copy(value: Any) -> Any:
    # The lists (warnings, ignored) are changed in place: keep what was written, not a view.
    return [dict(v) if isinstance(v, dict) else v for v in value] \
        if isinstance(value, list) else value


def apply(state: State, raw: bytes) -> int:
    """Apply the journal `raw` to `state` (read from the snapshot it belongs to); return how
    many lines were applied. Lines of another snapshot are not; reading ends at the first line
    that is not whole (a write cut short)."""
    applied = 0
    for data in journal_lines(raw, state.journal_id, orjson.loads):
        try:
            task = task_from_dict(data["task"])
            top = top_from_dict(data.get("top") or {})
        except (KeyError, TypeError):
            break
        if not 1 <= task.index <= len(state.tasks) or task.status not in STATUSES:
            break
        state.tasks[task.index - 1] = task
        for name, value in top.items():
            if name in TOP:
                setattr(state, name, value)
        applied += 1
    return applied


class Journal:
    """The journal file a run appends to, held open between saves."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0
        self._fd: int | None = None
        self._identity = (0, 0)  # of the file held open

    def start(self) -> None:
        """An empty journal for the snapshot just written (the old one's lines are in it)."""
        self.close()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o666)
        self._identity = identity(self._fd)
        self.lines = 0

    def append(self, line: bytes) -> bool:
        """Add one line; False when there is no journal to add to (none started, or its file
        was deleted or replaced since, say by an agent's `git clean -fdx`): the caller writes
        a snapshot instead."""
        if self._fd is None or gone(self.path, self._fd, self._identity):
            return False
        try:
            written = os.write(self._fd, line)
            if written != len(line):  # a full disk: what was written is a torn line
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError:
            # Lines after a torn one would never be read: the next save is a snapshot.
            self.close()
            raise
        self.lines += 1
        return True

    def remove(self) -> None:
        """The journal is in a snapshot now: drop it."""
        self.close()
        self.path.unlink(missing_ok=True)

    @property
    def started(self) -> bool:
        return self._fd is not None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
