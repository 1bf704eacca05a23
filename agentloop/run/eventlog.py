"""events.jsonl: every event of a run appended as it happens (its format: run/events.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Callable, Iterator

from agentloop.files import held_open
from agentloop.run.events import Event, RunFinished, from_json, to_json
from agentloop.run.lane_tag import set_lane


class EventLog:
    """Appends every event to `.agent-loop/events.jsonl`; a reader elsewhere follows the file,
    so no consumer of the log can slow the loop down."""

    def __init__(self, path: Path, clock: Callable[[], str]) -> None:
        self.path = path
        self.clock = clock
        self._out: IO[bytes] | None = None
        self._identity = (0, 0)  # of the file held open

    def __call__(self, event: Event) -> None:
        """Append one event; held open for the run, so that a file an agent deleted comes
        back whole, earlier runs' events included."""
        if self._out is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._out = open(self.path, "a+b")  # readable too: see held_open.put_back
            self._identity = held_open.identity(self._out)
        else:
            fresh = held_open.put_back(self.path, self._out, self._identity)
            if fresh is not None:
                self._out.close()
                self._out = fresh
                self._identity = held_open.identity(fresh)
        # Straight to the file, each event whole in one write (appended: O_APPEND): a reader
        # follows the file as it grows, and nothing waits in a buffer to be flushed.
        line = memoryview(to_json(event, self.clock()))
        while line:  # a write cut short (a signal, a full disk) goes on where it stopped
            line = line[os.write(self._out.fileno(), line):]

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None


def follow(path: Path, poll: float = 0.2,
           running: Callable[[], bool] = lambda: True) -> Iterator[Event]:
    """The newest run's events in `path`, then new ones as they are written, until that run
    finishes, or is found no longer `running` with nothing left to read (killed: it wrote no
    RunFinished, or no event at all, the file not there yet). Lines the writer is still in the
    middle of wait for their end."""
    import time

    waited = 0
    while not path.exists():
        waited += 1
        # A run that holds its lock and has written nothing yet may die before it does: asked
        # once a second, as below, and the file looked for once more after.
        if waited % 5 == 0 and not running() and not path.exists():
            return
        time.sleep(poll)
    with open(path, "rb") as log:
        # Start at the newest run: find the last RunStarted.
        starts, offset, ended = [0], 0, False
        for line in log:
            if b'"type":"RunStarted"' in line:
                starts.append(offset)
                ended = False
            ended = ended or b'"type":"RunFinished"' in line
            offset += len(line)
        # That run finished, yet a run holds the lock: a new one that has said nothing yet
        # (followed from its first line), or that one letting go (shown after all).
        log.seek(offset)
        if not (ended and running() and _next_run(log, poll, running)):
            log.seek(starts[-1])
        try:
            for _, line in _lines(log, poll, running):
                event = from_json(line)
                if event is None:
                    continue
                # An event with no `lane` field of its own has its lane in the line only
                # (to_json): the reader's thread names it while the event is said, as the
                # lane's thread did in the run (agentloop.console.live reads it there).
                set_lane(_lane_of(line) if "lane" not in type(event).__dataclass_fields__
                         else "")
                yield event
                if isinstance(event, RunFinished):
                    return
        finally:
            set_lane("")


def _lane_of(line: bytes) -> str:
    """The lane a line of events.jsonl names ("" when none)."""
    if b'"lane":' not in line:
        return ""
    import orjson

    value = orjson.loads(line).get("lane")
    return value if isinstance(value, str) else ""


def _next_run(log: IO[bytes], poll: float, running: Callable[[], bool]) -> bool:
    """Wait, `log` read to its end, for the next run's first line (its RunStarted): True with
    `log` there; False once no run is `running` and none came (what the last run writes after
    its RunFinished, an on-finish hook's line, is no new run)."""
    for at, line in _lines(log, poll, running):
        if b'"type":"RunStarted"' in line:
            log.seek(at)
            return True
    return False


def _lines(log: IO[bytes], poll: float, running: Callable[[], bool]
           ) -> Iterator[tuple[int, bytes]]:
    """The whole lines of `log` from where it stands, each with the offset it starts at, as
    they are written, until no run is `running` and nothing is left to read. A line the
    writer is still in the middle of waits for its end."""
    import time

    at, pending, idle = log.tell(), b"", 0
    while True:
        chunk = log.readline()
        if not chunk:
            idle += 1
            # Asked once a second, not at each poll (the look takes the lock an instant), and
            # read once more after: the run may have written its last line meanwhile.
            if idle % 5 == 0 and not running() and not (chunk := log.readline()):
                return
            if not chunk:
                time.sleep(poll)
                continue
        pending += chunk
        if not pending.endswith(b"\n"):
            continue  # the writer is mid-line
        line, pending = pending, b""
        yield at, line
        at = log.tell()
