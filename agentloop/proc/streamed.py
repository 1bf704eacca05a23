"""The agent's long command, streamed: its output of any size goes line by line to a callback
and is never held whole; a timeout, a Ctrl+C or its end stops its whole process group.

It takes an argv list (never a shell), and a missing program comes out as our own exception,
as a short command's does (agentloop.proc.commands, which counts its start too).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

import agentloop.proc.running as running
from agentloop.errors import Interrupted
from agentloop.ondemand import dataclass as on_first_use
from agentloop.proc.commands import not_started, note_start
from agentloop.proc.environ import popen_env
from agentloop.proc.program_path import forget, located
from agentloop.proc.read_output import Deadline, Expired, lines
from agentloop.proc.read_output import tail as read_tail
from agentloop.proc.reaper import adopt_orphans, children, end_adopted, reaped, spawn
from agentloop.proc.signals import held_back, shielded
from agentloop.proc.spawn import Streaming, prompt_input, usable
from agentloop.proc.watchdog import die_with_parent, watchdog

# Grace between the signals of an escalating stop (SIGINT -> SIGTERM -> SIGKILL).
STOP_GRACE_SECONDS = 3.0
# Emptied stderr files of finished agent runs, for the next run to take (see _errors_file).
_spare_errors: list[IO[bytes]] = []
_spare_lock = threading.Lock()


# Made when the first agent's run starts (agentloop.ondemand), not at every start-up.
@on_first_use(frozen=True)
class Streamed:
    """A finished streamed command: its exit code, the tail of stderr, and whether we stopped it."""

    argv: list[str]
    returncode: int
    stderr_tail: str
    timed_out: bool
    paused: float = 0.0    # seconds the whole run was stopped while it ran (a machine asleep)


def stop_group(proc: subprocess.Popen[bytes] | Streaming,
               grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop a process and everything it started: SIGINT, then SIGTERM, then SIGKILL."""
    stop_groups([proc], grace)


def stop_groups(procs: Sequence[subprocess.Popen[bytes] | Streaming],
                grace: float = STOP_GRACE_SECONDS,
                told: Callable[[int], None] | None = None) -> None:
    """Stop processes and everything they started, all at once: SIGINT to every group, SIGTERM
    to those still running `grace` seconds later, SIGKILL `grace` seconds after that. However
    many there are, the stop takes what one takes. `told(n)` is called once every group has its
    SIGINT, `n` the processes it reached still running (what the stop says, said while they
    end: one that had ended, its lane yet to forget it, is not waited for); they are stopped
    whatever it raises."""
    held = [proc for proc in procs if _holds_group(proc)]
    with shielded():
        left: list[subprocess.Popen[bytes] | Streaming] = []
        try:
            left = _signalled(held, signal.SIGINT)
            asked = time.monotonic()  # the limit counts from here, whatever told() takes
            if told is not None:
                told(sum(proc.returncode is None for proc in left))
        finally:
            if left:
                left = _signalled(_running_at(left, asked + grace), signal.SIGTERM)
                _running_at(left, time.monotonic() + grace)
            for proc in held:
                # The leader may be gone while children it left behind still hold the group.
                _signalled([proc], signal.SIGKILL)
                proc.wait()


def _holds_group(proc: subprocess.Popen[bytes] | Streaming) -> bool:
    """Whether `proc`, or what it left behind in its group, is still there to stop."""
    if proc.poll() is None:  # (one thread at a time reaps it: agentloop.proc.spawn)
        return True
    try:  # reaped: only what it left behind can hold the group
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False  # nothing did: the usual end of an agent run
    return True


def _signalled(procs: list[subprocess.Popen[bytes] | Streaming], sig: int
               ) -> list[subprocess.Popen[bytes] | Streaming]:
    """`sig` sent to the group of each of `procs`; those whose group was there to take it."""
    sent = []
    for proc in procs:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            continue
        sent.append(proc)
    return sent


def _running_at(procs: list[subprocess.Popen[bytes] | Streaming], deadline: float
                ) -> list[subprocess.Popen[bytes] | Streaming]:
    """Those of `procs` still running at `deadline` (each waited for until then, not longer)."""
    left = []
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            left.append(proc)
    return left


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
    except OSError as exc:
        errors.close()
        raise not_started(argv, exc) from exc
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
    import tempfile  # loaded beside the lane's git (agentloop.proc.beside.agents_ready)

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
    note_start()
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
        # Said as the agent has its SIGINT, before the wait for it, not after it; a second
        # Ctrl+C cuts neither the line nor the stop short.
        stop_groups([proc], told=lambda _: running.stop_taken(1))
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
