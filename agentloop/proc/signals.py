"""Our own stop signals (Ctrl+C, SIGTERM, SIGHUP) around work that must not be cut in half: held
off while cleanup runs, or held back until a block is done. Main thread only: signals reach no
other."""

from __future__ import annotations

import _signal
import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Any, Iterator

from agentloop import left_alone
from agentloop.errors import stop

# signal.signal and signal.getsignal try to make an enum member of every handler they hand back
# (a failed Handlers(...) lookup for each Python function): held_back runs several times a task
# and hangup_settles_the_task once, so they set and read the handlers through the C functions
# beneath them (agentloop.left_alone reads them so too). The same handlers go in and come back
# out.
_set_handler = _signal.signal
_STOPS = (signal.SIGINT.value, signal.SIGTERM.value, signal.SIGHUP.value)


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


class _Hangup:
    """Where the terminal's hangup stands for the task under way (main thread only)."""

    held = False   # the task's agent finished: a hangup waits for the task to be settled
    came = False   # one came while held


def _on_hangup(signum: int, frame: FrameType | None) -> None:
    if _Hangup.held:
        _Hangup.came = True
        return
    stop(signum, frame)


@contextmanager
def hangup_settles_the_task() -> Iterator[None]:
    """A task's attempt and its settling: a SIGHUP (the terminal closed) stops the run like
    Ctrl+C, except once `agent_finished` was called: then the task is checked, recorded and
    committed first, and the stop comes as the block ends. The agent's work is paid for; a
    closed window is no reason to throw it away (Ctrl+C, a deliberate stop, still is)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # a parallel run's lane: the scheduler, on the main thread, takes the signal
        return
    if left_alone(signal.SIGHUP.value):
        yield  # a hangup is no stop here (`nohup agent-loop ...`)
        return
    previous = _set_handler(signal.SIGHUP.value, _on_hangup)
    try:
        yield
    finally:
        _set_handler(signal.SIGHUP.value, previous)
        came, _Hangup.held, _Hangup.came = _Hangup.came, False, False
    if came:
        raise KeyboardInterrupt


def agent_finished() -> None:
    """The task's agent ended well: from now on, a hangup waits until the task is settled."""
    if threading.current_thread() is threading.main_thread():
        _Hangup.held = True


@contextmanager
def held_back(kept: list[int] | None = None) -> Iterator[None]:
    """Let Ctrl+C, SIGTERM and SIGHUP that come during the block in only once it is done, each
    as it came (main thread only). Unlike a signal mask, this holds while other threads run (a
    signal may reach any thread, and Python raises it in the main thread at once), and a
    process started inside takes no blocked signals with it: the controller answers a lane that
    waits on it before it stops. `kept`: they are put there instead, for the caller to let in
    (signal.raise_signal) where it is ready for them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = [] if kept is None else kept

    def keep(sig: int, _frame: object) -> None:
        came.append(sig)

    previous: dict[int, Any] = {}
    for sig in _STOPS:
        if not left_alone(sig):
            previous[sig] = _set_handler(sig, keep)
    _held.append(came)
    try:
        yield
    finally:
        _held.pop()
        for number, handler in previous.items():
            _set_handler(number, handler)
        for number in dict.fromkeys(came) if kept is None else ():
            signal.raise_signal(number)


# What each held_back block open in the main thread keeps, the innermost last (cut_short).
_held: list[list[int]] = []
# Open stopping() blocks in the main thread: a stop came and is being carried out (cut_short).
_stopping: list[None] = []


def holding() -> bool:
    """Whether a held_back block is open in this thread (the main thread)."""
    return threading.current_thread() is threading.main_thread() and bool(_held)


@contextmanager
def cut_short() -> Iterator[None]:
    """Inside held_back (holding()): Ctrl+C, SIGTERM and SIGHUP during the block raise
    KeyboardInterrupt at once, for the caller to stop what it waits for (a hook of yours, which
    may run for a minute), and are kept all the same, for held_back to let in where it ends;
    one kept already, or a stop being carried out (stopping), raises it as the block begins.
    Outside held_back, nothing changes (a stop comes in as ever)."""
    if not holding():
        yield
        return
    came = _held[-1]

    def stop_now(sig: int, _frame: object) -> None:
        came.append(sig)
        raise KeyboardInterrupt

    previous = {sig: _set_handler(sig, stop_now) for sig in _STOPS
                if not left_alone(sig)}
    try:
        if came or _stopping:  # one came already: what would be waited for is not started
            raise KeyboardInterrupt
        yield
    finally:
        for number, handler in previous.items():
            _set_handler(number, handler)


@contextmanager
def stopping() -> Iterator[None]:
    """The clean-up of a stop that came before it (main thread only): inside, cut_short raises
    KeyboardInterrupt as its block begins, as for a stop kept during the hold. A --parallel
    run's stop waits for its lanes, and a task one of them completes meanwhile is saved and
    said, but what cut_short guards (its on-task hook) is not waited for."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopping.append(None)
    try:
        yield
    finally:
        _stopping.pop()
