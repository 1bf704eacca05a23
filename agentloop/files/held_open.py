"""Files agent-loop writes while an agent works beside them (a run's logs, events.jsonl): an
agent that deletes them (`git clean -fdx`, `rm -rf .agent-loop`) does not take them away. The
file we hold open keeps its bytes after its name is gone; they are written back under the name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

CHUNK = 1 << 20


def identity(held: IO[Any] | int) -> tuple[int, int]:
    """The device and inode of the file `held` (a file, or its descriptor) has open: the same
    for as long as it is open, so a writer looks once."""
    mine = os.fstat(held if isinstance(held, int) else held.fileno())
    return mine.st_dev, mine.st_ino


def gone(path: Path, held: IO[Any] | int, known: tuple[int, int] | None = None) -> bool:
    """Whether `path` no longer names the file `held` (a file, or its descriptor) has open
    (deleted, or replaced); `known`: its identity, looked up once already."""
    try:
        named = os.stat(path)
    except OSError:
        return True
    return (named.st_dev, named.st_ino) != (known or identity(held))


def put_back(path: Path, held: IO[Any],
             known: tuple[int, int] | None = None) -> IO[bytes] | None:
    """Write what `held` (open for reading too) holds to `path` again, if `path` lost it;
    return the new file, open for appending, or None when nothing was lost (or it could not be
    put back: the agent may have left no folder to write to, and a log is not worth stopping a
    run for)."""
    held.flush()
    if not gone(path, held, known):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = open(path, "a+b")
    except OSError:
        return None
    offset = 0
    while chunk := os.pread(held.fileno(), CHUNK, offset):
        fresh.write(chunk)
        offset += len(chunk)
    fresh.flush()
    return fresh
