"""The process groups of the agents (and checks) running now, so one Ctrl+C can stop them all:
a parallel run's lanes run in threads, and only the main thread hears signals. Fed by the
watchdog's start/end notes (agentloop.proc.watchdog), which every streamed command sends."""

from __future__ import annotations

import os
import signal
import threading
import time

_lock = threading.Lock()
_groups: set[int] = set()
_stop = threading.Event()


def add(group: int) -> None:
    """A streamed command started, leading process group `group`."""
    with _lock:
        _groups.add(group)


def remove(group: int) -> None:
    """It ended."""
    with _lock:
        _groups.discard(group)


def stopping() -> bool:
    """Whether every run is being stopped: the lane whose agent it was raises Interrupted."""
    return _stop.is_set()


def clear() -> None:
    """A new run in this process: nothing is being stopped."""
    _stop.clear()


def stop_all(grace: float = 3.0) -> None:
    """Mark every run stopped and stop each running group: SIGINT, SIGTERM, then SIGKILL, each
    after `grace` seconds; the threads that started them reap them."""
    _stop.set()
    with _lock:
        groups = set(_groups)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        groups = {g for g in groups if _signal(g, sig)}
        deadline = time.monotonic() + grace
        while groups and time.monotonic() < deadline:
            time.sleep(0.05)
            with _lock:
                groups &= _groups
        if not groups:
            return


def _signal(group: int, sig: int) -> bool:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
