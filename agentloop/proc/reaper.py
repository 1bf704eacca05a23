"""What an agent leaves running is ended with its run, even what escaped its process group.

agent-loop becomes a child subreaper (Linux, prctl PR_SET_CHILD_SUBREAPER): a process the agent
started that called `setsid` or was double-forked is re-parented to us, not to init, once its
parent exits. After an agent run, every child of ours that we did not start ourselves is such
an orphan, and is ended with whatever it started in turn. Elsewhere this is a no-op, and only
the agent's own process group is stopped (agentloop.proc).
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Callable, TypeVar

PR_SET_CHILD_SUBREAPER = 36
_enabled = False
_prctl: Callable[..., int] | None = None
_looked = False   # whether libc's prctl was looked for
# The children we started ourselves and have not reaped yet: never orphans, whichever thread
# started them (a parallel run's lanes start agents and git at the same time as another lane
# ends its agent's orphans). Started and noted under the lock, so none is seen unnoted.
_lock = threading.Lock()
_ours: set[int] = set()
Child = TypeVar("Child")


def spawn(start: Callable[[], Child]) -> Child:
    """Start a child (`start()` returns it, with its pid) and note it as ours."""
    with _lock:
        child = start()
        _ours.add(child.pid)  # type: ignore[attr-defined]
    return child


def reaped(pid: int) -> None:
    """A child of ours ended and was waited for."""
    with _lock:
        _ours.discard(pid)


def prctl() -> Callable[..., int] | None:
    """libc's prctl, found once (ctypes, a few milliseconds to import: a run loads it beside
    its lane's creation, agentloop.proc.beside.agents_ready); None where there is none."""
    global _prctl, _looked
    if not _looked:
        try:
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _prctl = None
        _looked = True
    return _prctl


def adopt_orphans() -> bool:
    """Make this process the subreaper of what it starts; False where that is not possible."""
    global _enabled
    if _enabled:
        return True
    call = prctl()
    _enabled = call is not None and call(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _enabled


def children() -> set[int]:
    """The pids whose parent is this process (Linux /proc; empty elsewhere). Each thread's
    `children` file names them at the cost of a read or two; a kernel built without it makes
    us look through every process's stat instead."""
    me, found, listed = os.getpid(), set[int](), False
    try:
        threads = os.listdir(f"/proc/{me}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            found.update(int(pid) for pid in _read(f"/proc/{me}/task/{tid}/children").split())
            listed = True
        except OSError:  # the thread ended, or the kernel has no such file
            continue
    return found if listed else _scan(me)


def _read(path: str) -> bytes:
    # Raw reads: open() would add a buffer, an isatty and two seeks to each file, and this is
    # read for every thread twice a task.
    # A short read is the end: the kernel fills a read of these files a page at a time, record
    # by record (pids of at most 8 characters), so one that stopped under half a page had no
    # record left (a second read, to see it answer nothing, was two calls a task).
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
            if len(chunk) < 2048:
                break
    finally:
        os.close(fd)
    return b"".join(chunks)


def _scan(me: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = text[text.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(me):
            found.add(int(stat.parent.name))
    return found


def end_adopted(before: set[int], rounds: int = 10) -> int:
    """SIGKILL every child of ours that was not there `before` (nor is the watchdog), and reap
    it; its own children become ours in turn, so it goes on until none is left. How many."""
    if not _enabled:
        return 0
    ended = 0
    for _ in range(rounds):
        with _lock:
            orphans = children() - before - _ours
            if not orphans:
                break
            for pid in orphans:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    ended += 1
                except (ProcessLookupError, ChildProcessError):
                    pass
    return ended
