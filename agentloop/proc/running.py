"""The agent runs going on now, so one Ctrl+C can stop them all: a parallel run's lanes run in
threads, and only the main thread hears signals."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_running: dict[int, Any] = {}
_stop = threading.Event()


def add(proc: Any) -> None:
    """An agent run started (its process leads its own group)."""
    with _lock:
        _running[proc.pid] = proc


def remove(proc: Any) -> None:
    """An agent run ended."""
    with _lock:
        _running.pop(proc.pid, None)


def stopping() -> bool:
    """Whether every agent run is being stopped: the lane that ran one raises Interrupted."""
    return _stop.is_set()


def stop_all() -> list[Any]:
    """Mark every run stopped and return them, for the caller to stop their groups."""
    _stop.set()
    with _lock:
        return list(_running.values())


def clear() -> None:
    """A new run in this process: nothing is being stopped."""
    _stop.clear()
