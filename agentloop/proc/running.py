"""The agent runs going on now, so one Ctrl+C can stop them all: a parallel run's lanes run in
threads, and only the main thread hears signals; and the work that waits for the next one to
start."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Protocol, TypeVar


class _Process(Protocol):
    @property
    def pid(self) -> int: ...


Proc = TypeVar("Proc", bound=_Process)

_lock = threading.Lock()
_running: dict[int, Any] = {}
# The agent's program asked a short question in a lane's thread (the retry advisor, the commit
# message), by pid, each the leader of its own session: a stop kills them at once, as a Ctrl+C
# does on the main thread (agentloop.proc.commands), and their lane reaps them.
_asked: dict[int, Any] = {}
_stop = threading.Event()
# Called once the next agent run has started (after_next_stream), just before it starts
# (before_next_stream), and once the next short command has started (during_next_wait).
_after: list[Callable[[], None]] = []
_before: list[Callable[[], None]] = []
_during: list[Callable[[], None]] = []
_after_lock = threading.Lock()
# What a stop says first, once (on_stop): the run's line that it is stopping.
_on_stop: list[Callable[[int], None]] = []
_told = threading.Event()


def add(proc: Any) -> None:
    """An agent run started (its process leads its own group)."""
    with _lock:
        _running[proc.pid] = proc


def started(start: Callable[[], Proc]) -> Proc | None:
    """`start()` (which starts an agent run) and the run it started added, unless every run is
    being stopped: None then, and nothing started. One step under the lock stop_all takes: a
    lane that passed every check before a Ctrl+C (its budget wait woke as the stopped agent
    beside it ended) starts no agent after it, and one started just before is in the list that
    stop_all hands over."""
    return _kept_in(_running, start)


def _kept_in(table: dict[int, Proc], start: Callable[[], Proc]) -> Proc | None:
    with _lock:
        if _stop.is_set():
            return None
        proc = start()
        table[proc.pid] = proc
        return proc


def remove(proc: Any) -> None:
    """An agent run ended."""
    with _lock:
        _running.pop(proc.pid, None)


def stopping() -> bool:
    """Whether every agent run is being stopped: the lane that ran one raises Interrupted."""
    return _stop.is_set()


def asked(start: Callable[[], Proc]) -> Proc | None:
    """`start()` (which starts the agent's program for a short question, in a session of its
    own) and the child it started kept for a stop to kill; None, nothing started, once every
    run is being stopped."""
    return _kept_in(_asked, start)


def answered(child: Any) -> None:
    """A short question's child ended (and is reaped)."""
    with _lock:
        _asked.pop(child.pid, None)


def stop_all() -> list[Any]:
    """Mark every run stopped and return them, for the caller to stop their groups; the short
    questions being asked are killed now, their lanes waiting for them end at once."""
    with _lock:  # with started's check and start: no run starts after this, none is missed
        _stop.set()
        for child in _asked.values():
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return list(_running.values())


def clear() -> None:
    """A new run in this process: nothing is being stopped."""
    _stop.clear()
    _told.clear()


def on_stop(call: Callable[[int], None] | None) -> None:
    """`call(agents)` once a stop is taken, before its agents are stopped (stop_taken); None:
    nothing."""
    _on_stop[:] = [] if call is None else [call]


def stop_taken(agents: int) -> None:
    """A stop was taken and `agents` agent runs are about to be stopped: said once a run, so
    what a person sees says so at once, not once the agents have ended."""
    if _told.is_set() or not _on_stop:
        return
    _told.set()
    _on_stop[0](agents)


def after_next_stream(call: Callable[[], None]) -> None:
    """`call` (which raises nothing) called once the next streamed command (the next agent)
    has started, in the thread that started it: work held back so that it does not hold that
    agent back (a start holds every thread of ours until its child runs, and a new thread
    takes the GIL to begin)."""
    with _after_lock:
        _after.append(call)


def before_next_stream(call: Callable[[], None]) -> None:
    """`call` called just before the next streamed command (the next agent) starts, in the
    thread that starts it: the wait for what that agent needs and a thread readies beside the
    run's set-up (agentloop.run.start), which the set-up itself (a lane's `git worktree add`,
    the records it saves) need not wait for."""
    with _after_lock:
        _before.append(call)


def before_start() -> None:
    """An agent run is about to start (agentloop.proc.streamed.stream): what it waits for,
    now."""
    with _after_lock:
        before = _before[:]
        _before.clear()
    for call in before:
        call()


def during_next_wait(call: Callable[[], None]) -> None:
    """`call` (which raises nothing and returns at once: it starts a thread) called once the
    next short command has started, before it is waited for, in the thread that waits: work
    for a thread of ours that takes the GIL while the caller waits on a child (a lane's `git
    worktree add`), not while the caller runs Python of its own, which would wait for it."""
    with _after_lock:
        _during.append(call)


def waiting() -> None:
    """A short command started, and the caller is about to wait for it
    (agentloop.proc.commands.run): what was held back for that moment, now."""
    if not _during:   # the common case, without the lock
        return
    with _after_lock:
        during = _during[:]
        _during.clear()
    for call in during:
        call()


def after_start() -> None:
    """The agent run just started (agentloop.proc.streamed.stream): what waited for it, now."""
    with _after_lock:
        after = _after[:]
        _after.clear()
    for call in after:
        call()
