"""The only place that starts processes.

Two shapes: `run` for short commands whose output we want whole (jj, git helpers), and `stream` for
the agent, whose output of any size goes line by line to a callback and is never held whole.
Both take an argv list (never a shell), and turn a missing program, a timeout and a non-zero exit
into our own exceptions carrying the command and its output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator, Mapping

from agentloop.errors import Interrupted, ProcessError, ProgramNotFound

# Grace between the signals of an escalating stop (SIGINT -> SIGTERM -> SIGKILL).
STOP_GRACE_SECONDS = 3.0
# A line longer than this is cut into pieces of this size, so one endless line cannot fill memory.
MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Completed:
    """A finished short command."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Streamed:
    """A finished streamed command: its exit code, the tail of stderr, and whether we stopped it."""

    argv: list[str]
    returncode: int
    stderr_tail: str
    timed_out: bool


def _describe(argv: list[str]) -> str:
    return " ".join(argv)


def run(argv: list[str], cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
        check: bool = True, timeout: float | None = 120, input: str | None = None) -> Completed:
    """Run a short command and return its output; raise ProcessError on failure when `check`."""
    try:
        proc = subprocess.run(argv, cwd=cwd, env=dict(env) if env is not None else None,
                              input=input, capture_output=True, text=True, timeout=timeout,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise ProgramNotFound(f"{argv[0]} not found: is it installed and on PATH?", argv) from exc
    except OSError as exc:
        raise ProcessError(f"cannot run {argv[0]}: {exc.strerror or exc}", argv) from exc
    except subprocess.TimeoutExpired as exc:
        raise ProcessError(f"`{_describe(argv)}` timed out after {timeout}s", argv) from exc
    result = Completed(argv, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        output = (proc.stderr or proc.stdout).strip()
        raise ProcessError(f"`{_describe(argv)}` failed (exit {proc.returncode}): {output}",
                           argv, proc.returncode, output)
    return result


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


def stop_group(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop a process and everything it started: SIGINT, then SIGTERM, then SIGKILL."""
    with shielded():
        _escalate(proc, grace)


def _escalate(proc: subprocess.Popen[bytes], grace: float) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    # The leader may be gone while children it left behind still hold the group.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook that makes the kernel kill the agent if agent-loop itself is SIGKILLed.

    The agent runs in its own session (so the terminal's Ctrl+C reaches only us and we stop it
    in order); without this it would outlive a killed agent-loop. Linux only; elsewhere None.
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        # Resolved before fork: the child calls into libc only, no imports, no locks.
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the hook ran
            os._exit(1)
    return hook


def _lines(pipe: IO[bytes]) -> Iterator[bytes]:
    while True:
        line = pipe.readline(MAX_LINE_BYTES)
        if not line:
            return
        yield line


def stream(argv: list[str], on_line: Callable[[bytes], None], cwd: Path | str | None = None,
           env: Mapping[str, str] | None = None, timeout: float | None = None) -> Streamed:
    """Run a long command in its own process group, handing each stdout line to `on_line`.

    A timeout or a KeyboardInterrupt stops the whole group; the interrupt is re-raised as
    Interrupted once the group is gone, so no agent process outlives us.
    """
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env) if env is not None else None,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                preexec_fn=_die_with_parent())
    except FileNotFoundError as exc:
        raise ProgramNotFound(f"{argv[0]} not found: is it installed and on PATH?", argv) from exc
    except OSError as exc:
        raise ProcessError(f"cannot run {argv[0]}: {exc.strerror or exc}", argv) from exc
    assert proc.stdout is not None and proc.stderr is not None
    stderr_tail: deque[bytes] = deque(maxlen=200)
    err_reader = threading.Thread(target=lambda: stderr_tail.extend(_lines(proc.stderr)),  # type: ignore[arg-type]
                                  daemon=True)
    err_reader.start()
    timed_out = threading.Event()
    timer = None
    if timeout is not None:
        def expire() -> None:
            timed_out.set()
            stop_group(proc)
        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
    try:
        for line in _lines(proc.stdout):
            on_line(line)
        proc.wait()
    except KeyboardInterrupt:
        stop_group(proc)
        raise Interrupted("interrupted") from None
    except BaseException:
        stop_group(proc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        proc.stdout.close()
        err_reader.join(timeout=5)
        # A grandchild that left the group may still hold stderr open; closing the pipe under
        # the reader thread would block on its lock, so leave it to the daemon thread then.
        if not err_reader.is_alive():
            proc.stderr.close()
    tail = b"".join(stderr_tail).decode("utf-8", "replace")
    return Streamed(argv, proc.returncode, tail, timed_out.is_set())
