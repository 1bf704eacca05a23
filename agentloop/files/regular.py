"""Reading one of agent-loop's own files that must be a regular file (a plan's state): a named
pipe, a device or a socket in its place is refused at once, where a plain read would wait for
a writer that never comes (`--status` hanging with no word)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotRegular(OSError):
    """The path is there but is not a regular file (nor a directory: IsADirectoryError)."""


def read_bytes(path: Path) -> bytes:
    """The file's bytes; FileNotFoundError, IsADirectoryError, NotRegular or another OSError
    when it cannot be read. Opened without blocking, so a named pipe is seen before any read,
    and checked on the open file itself (no race with a rename between a look and the open)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotRegular(errno.EINVAL, "not a regular file", str(path))
        handle = open(fd, "rb", closefd=True)  # noqa: SIM115 - it takes the fd over
    except BaseException:
        os.close(fd)
        raise
    with handle:
        return handle.read()
