"""Our own stop signals (Ctrl+C, SIGTERM, SIGHUP) around work that must not be cut in half: held
off while cleanup runs, or held back until a block is done. Main thread only: signals reach no
other."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def shielded() -> Iterator[None]:
    """Ignore Ctrl+C, SIGTERM and SIGHUP while cleanup that must finish runs (main thread only).

    A second Ctrl+C during a stop would otherwise cut the SIGINT -> SIGKILL escalation short,
    or leave a change half abandoned.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold Ctrl+C, SIGTERM and SIGHUP back until the block is done, then let them in (main
    thread only): for work an exception must not cut in half, such as a library building an
    object whose destructor then fails loudly. Start no process inside: it would inherit the
    blocked signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
