"""Exclusive file locks with flock(2): the run's lock (tried, never waited for) and the lanes'
bookkeeping lock (waited for). What filelock does on POSIX, without the 150 M instructions its
import costs a run's start (it pulls in logging, secrets, platform, urllib.parse); agent-loop runs
on POSIX only, its process groups need it.

flock(2) locks an open file description, not a process: each holder opens the file afresh, so two
threads of one process keep apart as two processes do. The lock goes when the descriptor is
closed or the process ends, however it ends (SIGKILL too): a killed holder never leaves a stale
lock behind. Descriptors are not inherited by children (os.open's default), so an agent or a git
started under the lock never holds it on after we are gone.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def try_lock(path: Path) -> int | None:
    """An exclusive lock on `path` (made when missing): its open descriptor, or None when another
    holder has it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_held(path: Path) -> bool:
    """Whether another holder has the lock on `path` now; a file that is not there is held by
    nobody. The look takes the lock for an instant when it is free (flock has no other way to
    ask), and never waits."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # a lock taken goes with it
    return False


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made when missing), waiting for it as long as another
    holder has it; a Ctrl+C while waiting ends the wait."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock with the descriptor
