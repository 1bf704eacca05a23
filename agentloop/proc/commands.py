"""Short commands: the door every command but the agent's goes through (jj, git, helpers).

`run` waits for a command and returns its output whole; `start` starts one that only reads and
returns the wait for it. Both take an argv list (never a shell), and turn a missing program, a
timeout and a non-zero exit into our own exceptions carrying the command and its output. The
agent's long command is streamed instead (agentloop.proc.streamed); both count their starts here.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from pathlib import Path
from typing import Callable, Mapping

import agentloop.proc.running as running
from agentloop.errors import Interrupted, ProcessError, ProgramNotFound
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.proc.environ import popen_env
from agentloop.proc.reaper import reaped, spawn
from agentloop.proc.signals import shielded
from agentloop.proc.spawn import Spawned, usable
from agentloop.proc.watchdog import watchdog

_started = 0


def started() -> int:
    """How many processes agent-loop has started so far: one who looked at the working tree
    can tell whether anything but its own code could have changed it since."""
    return _started


def note_start() -> None:
    """One more process is about to start (started)."""
    global _started
    _started += 1


@dataclass(frozen=True)
class Completed:
    """A finished short command."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str



def not_started(argv: list[str], exc: OSError | ValueError) -> ProcessError:
    """What to raise when `argv` could not be started: ProgramNotFound for a missing program,
    else ProcessError saying why (a NUL byte in an argument, a command line too long)."""
    if isinstance(exc, FileNotFoundError):
        return ProgramNotFound(f"{argv[0]} not found: is it installed and on PATH?", argv)
    return ProcessError(_cannot_run(argv, exc), argv)


def _cannot_run(argv: list[str], exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):
        return f"cannot run {argv[0]}: {exc} in its command line"
    if exc.errno == errno.E2BIG:
        # Linux takes at most 128 KiB per argument (and about 2 MiB for all with the environment).
        longest = max(len(a.encode("utf-8", "surrogateescape")) for a in argv)
        return (f"cannot run {argv[0]}: its command line is too long for the system (the longest "
                f"argument is {longest:,} bytes; Linux takes at most 128 KiB per argument)")
    return f"cannot run {argv[0]}: {exc.strerror or exc}"


def _describe(argv: list[str]) -> str:
    return " ".join(argv)


def run(argv: list[str], cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
        check: bool = True, timeout: float | None = 120, input: str | bytes | None = None,
        guarded: bool = False, meanwhile: Callable[[], object] | None = None) -> Completed:
    """Run a short command and return its output; raise ProcessError on failure when `check`.

    Every command runs in a session of its own, so a terminal's Ctrl+C reaches agent-loop only;
    a Ctrl+C while a short command (git, jj) runs lets it finish, then stops us: a VCS command
    killed halfway leaves locks and half-written state behind. Bytes are bytes: output that is
    not UTF-8 comes back with its odd bytes as surrogates (paths round-trip), never a crash.

    `guarded`: a call of the agent's program (the retry advisor, the commit-message writer). The
    watchdog kills its group should we die first, and a Ctrl+C or timeout kills it at once.
    `meanwhile`: called once the command has started, before it is waited for (what starts a
    process of its own to run beside this one: each start holds every thread of ours until its
    child runs, so the command waited for goes first).
    """
    watched = guarded and watchdog.ready()
    data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input

    def launch() -> subprocess.Popen[bytes] | Spawned:
        return _launch(argv, cwd, env, data is not None)

    # The agent's program: a parallel run's stop, which only the main thread hears, kills it
    # (running.stop_all) rather than wait for its answer, and none starts after the stop.
    child = running.asked(launch) if guarded else launch()
    if child is None:
        raise Interrupted("interrupted")
    try:
        try:
            if meanwhile is not None:
                meanwhile()
            running.waiting()   # work held back for a thread while we wait (during_next_wait)
        except BaseException:   # meanwhile's error, or a stop as a thread starts
            with shielded():  # reaped, its answer dropped: the error goes on up
                _finished(child, argv, data, timeout, None, False)
            raise
        done = _finished(child, argv, data, timeout, child.pid if watched else None, check)
    finally:
        if guarded:
            running.answered(child)
    if guarded and running.stopping():  # cut short by the stop: no answer to read
        raise Interrupted("interrupted")
    return done


def start(argv: list[str], cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
          timeout: float | None = 120) -> Callable[[], Completed]:
    """A short command started now, as `run` starts it, and the function that waits for it
    (`run(..., check=False)`'s answer): a command that only reads runs beside what the caller
    does meanwhile, with no thread to start and hand the GIL to. Its output waits in its pipe
    (a fuller pipe only holds it back). The function must be called on every path: it reaps."""
    child = _launch(argv, cwd, env, False)
    _reads[child.pid] = child

    def wait() -> Completed:
        try:
            return _finished(child, argv, None, timeout, None, False)
        finally:
            _reads.pop(child.pid, None)
    return wait


# The children of `start` not waited for yet: only reads, which a run that fails before it
# needs their answers stops (cut_reads) rather than wait for (a full `git status` of a large
# checkout takes seconds).
_reads: dict[int, subprocess.Popen[bytes] | Spawned] = {}


def pending_reads() -> frozenset[int]:
    """The commands `start` started that nobody has waited for yet, by pid (cut_reads)."""
    return frozenset(_reads)


def cut_reads(pids: frozenset[int]) -> None:
    """Stop those of `pids` (pending_reads) that nobody has waited for yet (their waits still
    reap them, and answer with the kill's exit)."""
    for pid in pids:
        child = _reads.get(pid)
        if child is not None and child.returncode is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)  # each started in a session of its own
            except (ProcessLookupError, PermissionError):
                pass


def _launch(argv: list[str], cwd: Path | str | None, env: Mapping[str, str] | None,
            feed: bool) -> subprocess.Popen[bytes] | Spawned:
    """The child of a short command, started in a session of its own."""
    note_start()
    try:
        if usable(cwd):
            return spawn(lambda: Spawned(argv, env, feed))
        return spawn(lambda: subprocess.Popen(
            argv, cwd=cwd, env=popen_env(env),
            stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True))
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
        raise not_started(argv, exc) from exc


def _finished(child: subprocess.Popen[bytes] | Spawned, argv: list[str], data: bytes | None,
              timeout: float | None, group: int | None, check: bool) -> Completed:
    """Feed, collect and wait for a short command's child; its Completed."""
    if group is not None:
        watchdog.tell("start", group)
    try:
        out, err = _communicate(child, data, timeout, group)
    except subprocess.TimeoutExpired as exc:
        _kill(child, child.pid)
        child.communicate()
        raise ProcessError(f"`{_describe(argv)}` timed out after {timeout}s", argv) from exc
    finally:
        if group is not None:
            watchdog.tell("end", group)
    stdout, stderr = (b.decode("utf-8", "surrogateescape") for b in (out, err))
    code = child.wait()
    reaped(child.pid)
    result = Completed(argv, code, stdout, stderr)
    if check and code != 0:
        output = (stderr or stdout).strip()
        raise ProcessError(f"`{_describe(argv)}` failed (exit {code}): {output}", argv, code,
                           output)
    return result


def _communicate(child: subprocess.Popen[bytes] | Spawned, data: bytes | None,
                 timeout: float | None, group: int | None) -> tuple[bytes, bytes]:
    try:
        return child.communicate(data, timeout=timeout)
    except (KeyboardInterrupt, Interrupted):
        if group is not None:  # the agent's program: stopped at once, with its group
            _kill(child, group)
            child.wait()
            raise
        with shielded():  # a VCS command: let it finish, then stop
            child.communicate(timeout=timeout)
        raise


def _kill(child: subprocess.Popen[bytes] | Spawned, group: int | None) -> None:
    try:
        if group is not None:
            os.killpg(group, signal.SIGKILL)
        else:
            child.kill()
    except ProcessLookupError:
        pass
