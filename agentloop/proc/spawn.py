"""Commands started with posix_spawn, for agentloop.proc: a short one whose output it collects
(Spawned) and the agent it streams (Streaming). The same child as Popen makes (a session of its
own, SIGPIPE, SIGXFSZ and SIGCHLD back to their defaults, nothing inherited but its three
standard streams), a third of a millisecond sooner, which is a tenth of what a git command costs.

posix_spawn cannot change the child's folder, so proc uses this only for commands that run in
ours (the repository root, where agent-loop is almost always started); elsewhere, Popen.
The objects answer the few calls proc makes of a Popen: communicate (again after a Ctrl+C, where
it left off), wait, poll, kill, pid, returncode, and for a streamed run its stdout. The
environment is handed over as agentloop.proc.environ keeps it (as bytes, encoded once).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Mapping

import agentloop.proc.program_path as program_path
from agentloop.proc.environ import for_child

CHUNK = 1 << 16
# What Popen's restore_signals gives a child back (Python itself ignores SIGPIPE), and
# SIGCHLD, which a child that waits for its own children must not inherit ignored.
DEFAULTS = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ", "SIGCHLD")
                 if hasattr(signal, name))


def _stdio_open() -> bool:
    # A pipe made while 0, 1 or 2 is closed would take that number, and be lost in the child;
    # and the descriptors to close in a child are found in /proc (Linux).
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return hasattr(os, "posix_spawn") and os.path.isdir(OWN_FDS)


def _inherited() -> list[int]:
    """Our descriptors a child would inherit besides 0, 1 and 2: ones we were started with (a
    shell's `9>lock`, a CI runner's pipes) or that a library opened so. Popen closes them all;
    so does every child started here."""
    found = []
    for name in os.listdir(OWN_FDS):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                found.append(fd)
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return found


OWN_FDS = "/proc/self/fd"
# close_range(2)'s flag that marks the descriptors close-on-exec instead of closing them.
CLOSE_RANGE_CLOEXEC = 4
_NO_END = 0xFFFFFFFF
_mark: Callable[[int, int, int], int] | None = None
_looked = False   # whether libc's close_range was looked for (once ctypes is loaded)


def _marker() -> Callable[[int, int, int], int] | None:
    """libc's close_range (Linux 5.11, glibc 2.34), found once ctypes is loaded: a run loads
    it beside its first agent's set-up (agentloop.proc.reaper), and loading it here, for the
    first git command, would cost that command a few milliseconds."""
    global _mark, _looked
    if not _looked and "ctypes" in sys.modules:
        import ctypes

        try:
            call = ctypes.CDLL(None, use_errno=True).close_range
            call.argtypes = (ctypes.c_uint, ctypes.c_uint, ctypes.c_int)
            call.restype = ctypes.c_int
            _mark = call
        except (OSError, AttributeError):
            _mark = None
        _looked = True
    return _mark


def _to_close() -> list[int]:
    """The descriptors of ours a child must be told to close: none once every one from 3 up is
    marked close-on-exec, in one call (whatever was opened since the last child, by us or a
    library, is marked with the rest); else the listing of /proc, a call per descriptor.
    Marking them in our own process changes nothing but what children inherit: every child of
    ours, started here or by Popen, closes them all anyway."""
    global _mark
    mark = _marker()
    if mark is not None:
        if mark(3, _NO_END, CLOSE_RANGE_CLOEXEC) == 0:
            return []
        _mark = None  # an older kernel (ENOSYS, EINVAL): the listing from now on
    return _inherited()


USABLE = _stdio_open()


def usable(cwd: str | os.PathLike[str] | None) -> bool:
    """Whether a command for `cwd` may be started this way."""
    if not USABLE:
        return False
    if cwd is None:
        return True
    try:
        return os.path.samefile(cwd, ".")
    except OSError:
        return False


def prompt_input(data: bytes) -> int:
    """A descriptor a child reads `data` from, to be closed once it is started: a pipe that
    holds it whole when it fits (no file made), else a temporary file, since a fuller pipe
    would wait on a reader while we wait on its output."""
    read, write = os.pipe()
    try:
        os.set_blocking(write, False)
        try:
            whole = os.write(write, data) == len(data) if data else True
        except BlockingIOError:
            whole = False
    finally:
        os.close(write)
    if whole:
        return read
    os.close(read)
    import tempfile  # rare (more than a pipe holds): off the way to the first agent

    with tempfile.TemporaryFile() as held:
        held.write(data)
        held.flush()
        copy = os.dup(held.fileno())
    os.lseek(copy, 0, os.SEEK_SET)
    return copy


def _found(name: str, path: str) -> str:
    """The program `name` found along `path`; FileNotFoundError, as exec says it, when none."""
    program = program_path.find(name, path)
    if program is None:
        raise FileNotFoundError(2, f"No such file or directory: {name!r}")
    return program


def _spawn(argv: list[str], env: Mapping[str, str] | None, stdout: int, stderr: int,
           stdin: int | None) -> int:
    """Start `argv` in a session of its own with these descriptors as its 0, 1 and 2 (no
    stdin: /dev/null); its pid."""
    environ = os.environ if env is None else env
    path = environ.get("PATH", os.defpath)
    program = _found(argv[0], path)
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_DUP2, stdout, 1), (os.POSIX_SPAWN_DUP2, stderr, 2),
        (os.POSIX_SPAWN_DUP2, stdin, 0) if stdin is not None else
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _to_close()]
    given = for_child(environ)
    try:
        return os.posix_spawn(program, argv, given, file_actions=actions, setsid=True,
                              setsigdef=DEFAULTS)
    except FileNotFoundError:
        if not program_path.dropped(argv[0], path):
            raise
    # Moved or gone since it was found (a reinstall): looked up along PATH again, once.
    program = _found(argv[0], path)
    return os.posix_spawn(program, argv, given, file_actions=actions, setsid=True,
                          setsigdef=DEFAULTS)


class _Child:
    """What both kinds answer of a started process: whether and how it ended, and SIGKILL.
    One thread at a time reaps it (as Popen's lock does): a --parallel stop waits for an agent
    on the main thread while its lane polls it, and the thread whose waitpid came second, told
    there was no such child, wrote an exit code of 0 over the one the first had read."""

    pid: int
    args: list[str]
    returncode: int | None = None
    _reaping: threading.Lock

    def poll(self) -> int | None:
        """Its exit code once it has ended (-N for a signal, like Popen), else None."""
        # Another thread reaping it now tells its code once done: till then, it runs.
        if self.returncode is None and self._reaping.acquire(blocking=False):
            try:
                if self.returncode is None:
                    try:
                        pid, status = os.waitpid(self.pid, os.WNOHANG)
                    except ChildProcessError:
                        pid, status = self.pid, 0  # reaped already: see wait
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            finally:
                self._reaping.release()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for it to end, at most `timeout` seconds (then TimeoutExpired), like Popen."""
        if timeout is None:
            with self._reaping:
                if self.returncode is None:
                    try:
                        _, status = os.waitpid(self.pid, 0)
                    except ChildProcessError:
                        # Started with SIGCHLD ignored, the kernel reaped it for us: its
                        # status is gone, and it counts as a success, as Popen counts it.
                        status = 0
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        deadline, delay = time.monotonic() + timeout, 0.0005
        while (code := self.poll()) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(delay, left, 0.05))
            delay *= 2
        return code

    def kill(self) -> None:
        """SIGKILL it, if it is still there to kill."""
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Spawned(_Child):
    """A running short command whose stdout and stderr we collect."""

    def __init__(self, argv: list[str], env: Mapping[str, str] | None, feed: bool) -> None:
        self.args, self._reaping = argv, threading.Lock()
        out, err = os.pipe(), os.pipe()
        given = os.pipe() if feed else None
        try:
            self.pid = _spawn(argv, env, out[1], err[1], given[0] if given else None)
        except BaseException:
            for fd in (*out, *err, *(given or ())):
                os.close(fd)
            raise
        os.close(out[1])
        os.close(err[1])
        self._out, self._err, self._in = out[0], err[0], None
        self._chunks: dict[int, list[bytes]] = {out[0]: [], err[0]: []}
        self._live = {out[0], err[0]}
        self._poller = select.poll()
        for fd in self._live:
            self._poller.register(fd, select.POLLIN)
        if given is not None:
            os.close(given[0])
            self._in = given[1]
            os.set_blocking(self._in, False)
            self._live.add(self._in)
            self._poller.register(self._in, select.POLLOUT)
        self._data: memoryview | None = None

    def communicate(self, data: bytes | None = None,
                    timeout: float | None = None) -> tuple[bytes, bytes]:
        """Feed `data`, collect stdout and stderr to their ends, wait; TimeoutExpired (or a
        Ctrl+C) leaves everything as it was for another call."""
        if self._data is None:
            self._data = memoryview(data or b"")
        if self._in is not None and not self._data:
            self._close(self._in)
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._live & {self._out, self._err}:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            for fd, events in self._poller.poll(None if wait is None else wait * 1000):
                if fd == self._in:
                    self._feed()
                elif fd in self._live:
                    chunk = os.read(fd, CHUNK)
                    if chunk:
                        self._chunks[fd].append(chunk)
                    # A pipe whose writers are all gone (POLLHUP) has nothing after what a
                    # short read took: its end, without another poll and read to be told so.
                    if not chunk or (events & select.POLLHUP and len(chunk) < CHUNK):
                        self._close(fd)
                else:  # closed by a _close a stop cut short
                    self._poller.unregister(fd)
        if self._in is not None:  # it closed its output without reading all of its input
            self._close(self._in)
        self.wait()
        return b"".join(self._chunks[self._out]), b"".join(self._chunks[self._err])

    def _feed(self) -> None:
        assert self._in is not None and self._data is not None
        try:
            sent = os.write(self._in, self._data[:CHUNK])
        except BlockingIOError:
            return
        except BrokenPipeError:  # it stopped reading: what it says is still worth having
            sent = len(self._data)
        self._data = self._data[sent:]
        if not self._data:
            self._close(self._in)

    def _close(self, fd: int) -> None:
        # A stop between two steps finishes the others first: a stream left open in _live but
        # no longer polled made the stop's own wait for the command (proc.commands) poll
        # nothing, forever. One raised before the first leaves a closed stream polled, which
        # communicate unregisters when poll names it.
        try:
            self._poller.unregister(fd)
        finally:
            try:
                os.close(fd)
            finally:
                self._live.discard(fd)
        if fd == self._in:
            self._in = None

    def __del__(self) -> None:
        for fd in list(getattr(self, "_live", ())):
            try:
                os.close(fd)
            except OSError:
                pass


class Streaming(_Child):
    """A long command (the agent): its stdout a pipe proc reads line by line, stdin and stderr
    files proc hands over."""

    def __init__(self, argv: list[str], env: Mapping[str, str] | None, stdin: int | None,
                 stderr: int) -> None:
        self.args, self._reaping = argv, threading.Lock()
        out = os.pipe()
        try:
            self.pid = _spawn(argv, env, out[1], stderr, stdin)
        except BaseException:
            os.close(out[0])
            raise
        finally:
            os.close(out[1])
        self.stdout = os.fdopen(out[0], "rb", buffering=0)
