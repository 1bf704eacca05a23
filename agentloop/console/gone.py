"""Output is not the run: stdout or stderr closed under a running loop (`| head -4` ended, `less`
quit: EPIPE; the terminal closed: EIO) makes the run go on quietly, writing only its logs and
events.jsonl, and end as it would have. A write that raised there would stop the task in the
middle and drop its paid work."""

from __future__ import annotations

import errno
import os

# typing for the checker only: --status imports this module, not typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any


GONE = (errno.EPIPE, errno.EIO)


class Steady:
    """A text stream whose reader may go away: once a write or flush finds it gone, the stream
    points at /dev/null and every later write is dropped without a word."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        """Write, or drop the text when the reader is gone."""
        if not self.gone:
            try:
                self._stream.write(text)
            except OSError as exc:
                self._lost(exc)
        return len(text)

    def flush(self) -> None:
        """Flush, or drop what is buffered when the reader is gone."""
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._lost(exc)

    def isatty(self) -> bool:
        """A terminal, while it is there."""
        return not self.gone and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        # encoding, errors, fileno, buffer: click checks encoding and errors to decide that this
        # stream can take text as it is (and so writes through it, not around it).
        return getattr(self._stream, name)

    def is_pipe(self) -> bool:
        """Whether this stream writes into a pipe (`| tee log`)."""
        import stat  # loaded with os

        try:
            return stat.S_ISFIFO(os.fstat(self._stream.fileno()).st_mode)
        except (OSError, ValueError):
            return False

    def reader_left(self, within: float) -> bool:
        """Whether the reader of this pipe has gone, waiting `within` seconds at most for it to
        go; gone, the stream is as a write had found it gone. False at once when not a pipe."""
        if self.gone:
            return True
        if not self.is_pipe():
            return False
        import select  # loaded already in a run (subprocess imports it): no import on a stop

        try:
            fd = self._stream.fileno()
            poller = select.poll()
            poller.register(fd, 0)  # no event asked for: POLLERR alone, once no reader is left
            if not poller.poll(int(within * 1000)):
                return False
        except (OSError, ValueError):
            return False
        self._lost(OSError(errno.EPIPE, os.strerror(errno.EPIPE)))
        return True

    def onto(self, fd: int) -> None:
        """Write from now on where `fd` writes (the terminal, this stream's reader gone)."""
        try:
            os.dup2(fd, self._stream.fileno())
        except (OSError, ValueError):
            return
        self.gone = False

    def _lost(self, exc: OSError) -> None:
        if exc.errno not in GONE:
            raise exc
        self.gone = True
        # The descriptor itself goes to /dev/null: what the stream still buffers, and a writer
        # that holds the descriptor (rich, the interpreter's last flush), then write nowhere.
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError):
            pass


def steady(stream: Any) -> Any:
    """`stream` wrapped (once) so that a reader gone away never raises into the run."""
    return stream if stream is None or isinstance(stream, Steady) else Steady(stream)


# How long a stop waits for stdout's pipe reader to end of the same Ctrl+C.
READER_WAIT_SECONDS = 0.5


def stop_reaches_the_terminal(out: Any, err: Any, err_is_terminal: bool) -> bool:
    """At a stop, whether stderr reaches the terminal the Ctrl+C came from, made so where it
    can be. With stdout a pipe (`| tee log`) whose reader the same Ctrl+C ends a moment later,
    that reader is waited for (READER_WAIT_SECONDS at most: a reader that stays costs it), so
    that what follows knows stdout has gone; with stderr a pipe gone with it (`2>&1 | tee
    log`), stderr is pointed at that terminal, where this process is the foreground job."""
    if err_is_terminal:
        _reader_left(out)
        return True
    if not (isinstance(err, Steady) and err.is_pipe() and isinstance(out, Steady)
            and out.is_pipe()):
        return False
    tty = foreground_terminal()
    if tty is None:
        return False
    try:
        if not (_reader_left(out) and err.reader_left(0.0)):
            return False
        err.onto(tty)
    finally:
        os.close(tty)
    return True


def _reader_left(out: Any) -> bool:
    return isinstance(out, Steady) and out.reader_left(READER_WAIT_SECONDS)


def foreground_terminal() -> int | None:
    """The controlling terminal, opened for writing, when this process's group is its
    foreground job (where a Ctrl+C comes from); None without one (CI, a service, setsid) or in
    the background."""
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.tcgetpgrp(fd) == os.getpgrp():
            return fd
    except OSError:
        pass
    os.close(fd)
    return None
