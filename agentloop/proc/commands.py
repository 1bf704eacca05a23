"""The only place that starts processes.

Two shapes: `run` for short commands whose output we want whole (jj, git helpers), and `stream` for
the agent, whose output of any size goes line by line to a callback and is never held whole.
Both take an argv list (never a shell), and turn a missing program, a timeout and a non-zero exit
into our own exceptions carrying the command and its output.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Callable, Mapping

import agentloop.proc.running as running
from agentloop.errors import Interrupted, ProcessError, ProgramNotFound
from agentloop.ondemand import dataclass as on_first_use
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.proc.read_output import MAX_LINE_BYTES, Deadline, Expired, lines  # noqa: F401
from agentloop.proc.read_output import tail as read_tail
from agentloop.proc.reaper import adopt_orphans, children, end_adopted, reaped, spawn
from agentloop.proc.signals import held_back, shielded
from agentloop.proc.spawn import (
    Spawned,
    Streaming,
    forget,
    located,
    popen_env,
    prompt_input,
    usable,
)
from agentloop.proc.watchdog import die_with_parent, watchdog

# Grace between the signals of an escalating stop (SIGINT -> SIGTERM -> SIGKILL).
STOP_GRACE_SECONDS = 3.0


_started = 0
# Emptied stderr files of finished agent runs, for the next run to take (see _errors_file).
_spare_errors: list[IO[bytes]] = []
_spare_lock = threading.Lock()


def started() -> int:
    """How many processes agent-loop has started so far: one who looked at the working tree
    can tell whether anything but its own code could have changed it since."""
    return _started


def _count() -> None:
    global _started
    _started += 1


@dataclass(frozen=True)
class Completed:
    """A finished short command."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


# Made when the first agent's run starts (agentloop.ondemand), not at every start-up.
@on_first_use(frozen=True)
class Streamed:
    """A finished streamed command: its exit code, the tail of stderr, and whether we stopped it."""

    argv: list[str]
    returncode: int
    stderr_tail: str
    timed_out: bool
    paused: float = 0.0    # seconds the whole run was stopped while it ran (a machine asleep)


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
    child = _launch(argv, cwd, env, data is not None)
    try:
        if meanwhile is not None:
            meanwhile()
        running.waiting()   # work held back for a thread while we wait (during_next_wait)
    except BaseException:   # meanwhile's error, or a stop as a thread starts
        with shielded():  # reaped, its answer dropped: the error goes on up
            _finished(child, argv, data, timeout, None, False)
        raise
    return _finished(child, argv, data, timeout, child.pid if watched else None, check)


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
    _count()
    try:
        if usable(cwd):
            return spawn(lambda: Spawned(argv, env, feed))
        return spawn(lambda: subprocess.Popen(
            argv, cwd=cwd, env=popen_env(env),
            stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True))
    except FileNotFoundError as exc:
        raise ProgramNotFound(f"{argv[0]} not found: is it installed and on PATH?", argv) from exc
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
        raise ProcessError(_cannot_run(argv, exc), argv) from exc


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


def stop_group(proc: subprocess.Popen[bytes] | Streaming,
               grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop a process and everything it started: SIGINT, then SIGTERM, then SIGKILL."""
    if proc.returncode is not None:  # reaped: only what it left behind can hold the group
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return  # nothing did: the usual end of an agent run
    with shielded():
        _escalate(proc, grace)


def _escalate(proc: subprocess.Popen[bytes] | Streaming, grace: float) -> None:
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


def _start_streaming(argv: list[str], cwd: Path | str | None, env: Mapping[str, str] | None,
                     stdin: bytes | None, errors: IO[bytes],
                     watched: bool) -> subprocess.Popen[bytes] | Streaming:
    """The streamed child, started in a session of its own, its stderr into `errors` (closed
    here if it cannot start)."""
    given = None if stdin is None else prompt_input(stdin)

    def popen(executable: str | None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv, executable=executable, cwd=cwd, env=popen_env(env),
            stdin=given if given is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=errors, start_new_session=True,
            preexec_fn=None if watched else die_with_parent())

    try:
        if watched and usable(cwd):  # no pre-exec hook wanted: the quick way
            return spawn(lambda: Streaming(argv, env, given, errors.fileno()))
        # In another folder (a lane's): Popen, since Python's posix_spawn cannot change the
        # child's folder. Told where the program is (found once per PATH), Popen skips trying
        # every folder of PATH, each name encoded, a run.
        found = located(argv[0], env)
        try:
            return spawn(lambda: popen(found))
        except FileNotFoundError:
            if found is None:
                raise
            forget(argv[0], env)  # moved since it was found: let Popen look along PATH
            return spawn(lambda: popen(None))
    except FileNotFoundError as exc:
        errors.close()
        raise ProgramNotFound(f"{argv[0]} not found: is it installed and on PATH?", argv) from exc
    except OSError as exc:
        errors.close()
        raise ProcessError(_cannot_run(argv, exc), argv) from exc
    finally:
        if given is not None:
            os.close(given)  # the child has its own copy of the descriptor


def _errors_file(reused: bool) -> IO[bytes]:
    """A file for the agent's stderr: an emptied one an earlier run left (`reused`), else a
    new temporary file (on ext4 making one costs a hundred microseconds or more of the kernel's
    time, every run)."""
    if reused:
        with _spare_lock:
            if _spare_errors:
                return _spare_errors.pop()
    return tempfile.TemporaryFile()


def _done_with(errors: IO[bytes], reused: bool) -> None:
    """The run is over: its stderr file is emptied for the next run, or closed. Only where
    every process the agent left was ended with it (a subreaper, agentloop.proc.reaper): none
    is left holding the file to write into the next run's."""
    if reused and not errors.closed:
        try:
            errors.seek(0)
            errors.truncate()
        except OSError:
            errors.close()
            return
        with _spare_lock:
            _spare_errors.append(errors)
        return
    errors.close()


def _hand_on(proc: subprocess.Popen[bytes] | Streaming, deadline: Deadline,
             on_line: Callable[[bytes], None], meanwhile: Callable[[], None] | None) -> bool:
    """Each line `proc` writes to its stdout handed to `on_line`, until it ends; True when the
    deadline came first: its group is stopped, and what it wrote before that handed on too."""
    assert proc.stdout is not None
    exited = lambda: proc.poll() is not None  # noqa: E731
    try:
        for line in lines(proc.stdout.fileno(), deadline, exited, meanwhile):
            on_line(line)
    except Expired:
        stop_group(proc)
        # What it wrote before it stopped.
        for line in lines(proc.stdout.fileno(), Deadline(None), exited):
            on_line(line)
        return True
    return False


def stream(argv: list[str], on_line: Callable[[bytes], None], cwd: Path | str | None = None,
           env: Mapping[str, str] | None = None, timeout: float | None = None,
           stdin: bytes | None = None, started: Callable[[], None] | None = None,
           meanwhile: Callable[[], None] | None = None) -> Streamed:
    """Run a long command in its own process group, handing each stdout line to `on_line`;
    `started` is called once it runs, before its first line (work that need not delay it);
    `meanwhile` now and then while it runs (read_output.lines), in this thread.

    A timeout or a KeyboardInterrupt stops the whole group; the interrupt is re-raised as
    Interrupted once the group is gone, so no agent process outlives us. No thread and no
    pre-exec hook: stderr goes to a temporary file, and the watchdog stands in for the kernel's
    parent-death signal, so a run costs one fork of ours (see scripts/bench_overhead.py).
    """
    running.before_start()   # what a thread readied for it beside the run's set-up
    watched = watchdog.ready()
    _count()
    # Only a subreaper has orphans to end; elsewhere there is nothing to look for.
    reaping = adopt_orphans()
    before = children() if reaping else set()
    errors = _errors_file(reaping)
    proc, came = _launched(argv, cwd, env, stdin, errors, watched, reaping)
    deadline = Deadline(None if timeout is None else time.monotonic() + timeout)
    try:
        timed_out = _followed(proc, came, deadline, on_line, started, meanwhile)
    finally:
        tail = _left(proc, before, errors, reaping)
    return Streamed(argv, proc.wait(), tail, timed_out, deadline.paused)


def _launched(argv: list[str], cwd: Path | str | None, env: Mapping[str, str] | None,
              stdin: bytes | None, errors: IO[bytes], watched: bool, reaping: bool
              ) -> tuple[subprocess.Popen[bytes] | Streaming, list[int]]:
    """stream's child started, with the stops (signals) that came as it started, held back
    till then. Interrupted, nothing started, when every run is being stopped (Ctrl+C)."""
    # A stop that comes as the program starts waits until it can be stopped with it: raised
    # before the block below, it left the agent running while the attempt was rolled back, and
    # what it wrote after that stayed in the lane, taken by the task's next attempt for files
    # that were there before it (so on no commit). The stop check and the spawn are one step
    # under running's lock (running.started).
    came: list[int] = []
    with held_back(came):
        begun = running.started(
            lambda: _start_streaming(argv, cwd, env, stdin, errors, watched))
        if begun is None:  # every run is being stopped (Ctrl+C): this one never starts
            _done_with(errors, reaping)
            raise Interrupted("interrupted")
        assert begun.stdout is not None
        watchdog.tell("start", begun.pid)
    return begun, came


def _followed(proc: subprocess.Popen[bytes] | Streaming, came: list[int], deadline: Deadline,
              on_line: Callable[[bytes], None], started: Callable[[], None] | None,
              meanwhile: Callable[[], None] | None) -> bool:
    """stream's child followed to its end, its lines handed on; True when the deadline came
    first. Its group is stopped whatever ends it; a KeyboardInterrupt comes out as
    Interrupted once the group is gone."""
    try:
        for sig in dict.fromkeys(came):
            signal.raise_signal(sig)  # a stop that came as it started: it stops now
        running.after_start()
        if started is not None:
            started()
        timed_out = _hand_on(proc, deadline, on_line, meanwhile)
        proc.wait()
        # The agent is done: what it left running in its group, or outside it, goes too.
        stop_group(proc)
        if running.stopping():  # a parallel run's Ctrl+C stopped it from the main thread
            raise Interrupted("interrupted")
    except KeyboardInterrupt:
        stop_group(proc)
        raise Interrupted("interrupted") from None
    except BaseException:
        stop_group(proc)
        raise
    return timed_out


def _left(proc: subprocess.Popen[bytes] | Streaming, before: set[int], errors: IO[bytes],
          reaping: bool) -> str:
    """What stream's child leaves, however it ended: it is forgotten as running, what it
    orphaned ended, its stderr file read (the tail returned) and given back."""
    running.remove(proc)
    reaped(proc.pid)
    end_adopted(before)
    watchdog.tell("end", proc.pid)
    assert proc.stdout is not None
    proc.stdout.close()
    tail = read_tail(errors)
    _done_with(errors, reaping)
    return tail
