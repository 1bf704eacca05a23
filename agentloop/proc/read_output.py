"""Reading a running program's output: its stdout line by line, never whole, and the end of
its stderr."""

from __future__ import annotations

import os
import select
import time
from typing import IO, Callable, Iterator

from agentloop.ondemand import dataclass as on_first_use

# A line longer than this is cut into pieces of about this size, so one endless line cannot fill
# memory (reading one holds twice this). The CLI's longest lines, a tool result with an image in
# base64, stay below it: the API takes images of up to 5 MB, under 7 MiB as base64.
MAX_LINE_BYTES = 8 * 1024 * 1024
# How much is read at once from the agent's stdout, and kept of the end of its stderr.
READ_BYTES = 64 * 1024
STDERR_TAIL_BYTES = 64 * 1024
# After the agent exited, how long its stdout is read for what is left; and how often we look.
EXIT_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.25
# A wait that took this much longer than asked means we were not running: the whole run was
# stopped (SIGSTOP, Ctrl+Z, a laptop that slept with a clock that counts it). That time is
# nobody's work, so it does not count against the deadline.
STOPPED_SECONDS = 2.0


class Expired(Exception):
    """The deadline of a streamed command passed."""


@on_first_use()  # an agent's run's: agentloop.ondemand
class Deadline:
    """When a streamed command's time is up (None: never), and how long the whole run was
    stopped while it ran; each stop moves `at` on by its length."""

    at: float | None
    paused: float = 0.0


def lines(fd: int, deadline: Deadline, exited: Callable[[], bool] = lambda: False,
          meanwhile: Callable[[], None] | None = None) -> Iterator[bytes]:
    """The lines read from `fd` as they come; one longer than MAX_LINE_BYTES comes in pieces.
    `meanwhile` is called before each wait for more, so at least every POLL_SECONDS however
    quiet the program is.

    Once the program has `exited`, what is left is read for EXIT_GRACE_SECONDS at most: a
    process it left behind may hold the pipe open for ever, and the run is over all the same.
    """
    pending = bytearray()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    grace_end: float | None = None
    while True:
        if meanwhile is not None:
            meanwhile()
        now = time.monotonic()
        if grace_end is None and exited():
            grace_end = now + EXIT_GRACE_SECONDS
        ends = [t for t in (deadline.at, grace_end) if t is not None]
        wait = max(0.0, min([t - now for t in ends] + [POLL_SECONDS]))
        ready = poller.poll(wait * 1000)
        stopped = time.monotonic() - now - wait
        if stopped > STOPPED_SECONDS:
            deadline.paused += stopped
            if deadline.at is not None:
                deadline.at += stopped
        if not ready:
            if deadline.at is not None and time.monotonic() >= deadline.at:
                raise Expired
            if grace_end is not None and time.monotonic() >= grace_end:
                if pending:
                    yield bytes(pending)
                return
            continue
        chunk = os.read(fd, READ_BYTES)
        if not chunk:
            if pending:
                yield bytes(pending)
            return
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if pending:
                pending += chunk[start:end + 1]
                yield bytes(pending)
                pending.clear()
            else:
                yield chunk[start:end + 1]
            start = end + 1
        pending += chunk[start:]
        while len(pending) >= MAX_LINE_BYTES:
            yield bytes(pending[:MAX_LINE_BYTES])
            del pending[:MAX_LINE_BYTES]


def tail(file: IO[bytes]) -> str:
    """The end of what the command wrote to stderr."""
    size = file.seek(0, os.SEEK_END)
    file.seek(max(0, size - STDERR_TAIL_BYTES))
    return file.read().decode("utf-8", "replace")
