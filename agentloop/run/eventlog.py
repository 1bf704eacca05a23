"""events.jsonl: every event of a run appended as it happens (its format: run/events.py)."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Callable

from agentloop.files import held_open
from agentloop.run.events import Event, to_json


class EventLog:
    """Appends every event to `.agent-loop/events.jsonl`; a reader elsewhere follows the file,
    so no consumer of the log can slow the loop down."""

    def __init__(self, path: Path, clock: Callable[[], str]) -> None:
        self.path = path
        self.clock = clock
        self._out: IO[bytes] | None = None

    def __call__(self, event: Event) -> None:
        """Append one event; held open for the run, so that a file an agent deleted comes
        back whole, earlier runs' events included."""
        if self._out is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._out = open(self.path, "a+b")  # readable too: see held_open.put_back
        else:
            fresh = held_open.put_back(self.path, self._out)
            if fresh is not None:
                self._out.close()
                self._out = fresh
        self._out.write(to_json(event, self.clock()))
        self._out.flush()  # a reader follows the file as it grows

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
