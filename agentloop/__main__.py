"""`python -m agentloop`, and the `agent-loop` program: stop signals are ours from the first
instant, so a Ctrl+C while Python is still importing ends in one line too, never a traceback."""

from __future__ import annotations

import os
import signal
import sys

from agentloop import STARTING_INTERRUPTED, ctrl_c_raises, left_alone

# typing and types only for the checker: every module imported before main() takes the stops
# widens the moment in which a SIGTERM or SIGHUP ends Python's start with no word.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from types import FrameType
    from typing import NoReturn

    from agentloop.console.plain import Request

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop(signum: int, frame: FrameType | None) -> None:
    # SIGTERM and SIGHUP take the same careful path as Ctrl+C.
    raise KeyboardInterrupt


def main() -> None:
    """Console entry point."""
    _take_stops()
    if sys.stdout is None or sys.stderr is None or sys.stdin is None:
        _closed_streams()
    # The stops wait until the imports are done: a handler run inside an extension module's
    # initialisation (orjson's, measured: 1 start in 150 signalled at random) can crash the
    # interpreter with SIGSEGV instead of raising.
    if sys.argv[1:] == ["--version"]:
        _version()
    blocked, status, plain = _load(sys.argv[1:])
    try:
        # Inside the `try`: a stop that comes before the command takes the stops with its own
        # handler (agentloop.cli.main, which imports nothing before) ends in one line.
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if status is not None:
            from agentloop.console import quick

            quick.main(*status, sys.argv[1:])
        if plain is not None:
            from agentloop.console import plain as plain_run

            plain_run.main(plain, sys.argv[1:])
        from agentloop.cli import main as run_cli  # loaded by _load already

        run_cli()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except KeyboardInterrupt:  # before the command's own handling of a stop began
        _started_interrupted()
    _exit(code)


def _closed_streams() -> None:
    """Started with a standard descriptor closed (`agent-loop tasks.md >&-`, a supervisor that
    closes them), Python gives no stream for it: /dev/null takes its place, so the run goes on
    and ends as it would with its output gone (agentloop.console.gone), and no file or pipe
    the run opens later takes that number for a stream it is not."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    # The process's own streams, as Python would have made them: never closed.
    if sys.stdin is None:
        sys.stdin = open(0, closefd=False)
    if sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")


def _take_stops() -> None:
    """SIGTERM and SIGHUP take Ctrl+C's path, and every child's exit code is ours to read."""
    try:  # a Ctrl+C here (Python's own handler) is said in one line too
        for sig in (signal.SIGTERM, signal.SIGHUP):  # SIGHUP: a closed terminal, a dropped ssh
            if not left_alone(sig):
                signal.signal(sig, _stop)
        # Started with SIGCHLD ignored (some supervisors do that), the kernel would reap every
        # child itself, and each exit code, a failed agent's or git's, would read as success.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except KeyboardInterrupt:
        _started_interrupted()


def _version() -> NoReturn:
    """The one answer that needs nothing else: no click, none of our modules (click's own
    --version, for the option given with others, says the same)."""
    from agentloop import __version__

    try:
        sys.stdout.write(f"agent-loop, version {__version__}\n")
    except OSError:  # piped into a program that has gone (`| head -0`)
        pass
    _exit(0)


def _load(argv: list[str]) -> tuple[set[int | signal.Signals],
                                  tuple[Path | None, dict[str, bool]] | None, Request | None]:
    """The modules the command needs, loaded while the stops wait; (the signal mask to put
    back, the `--status` request answered without click or None, the run read without click
    or None). A stop that came meanwhile ends the start in one line."""
    try:
        # Inside the try: a stop already pending raises from the very call that blocks.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        # Held back now: a Ctrl+C, which ended the start in one line wherever it came, raises
        # KeyboardInterrupt again, for the command's own handling of a stop.
        ctrl_c_raises()
        # Start-up makes what lives as long as the process: collections walk it for nothing.
        from agentloop import collector

        collector.hold()
        # `--status` is answered without click (agentloop.console.quick): it is most of what
        # a user types while a plan runs, and click is most of its start-up.
        from agentloop.console import quick

        status = quick.status_request(argv)
        plain = None
        if status is None:
            # A run whose command line needs no click is read without it (agentloop.console.
            # plain): click and what it brings are a tenth of the way to the first agent.
            from agentloop.console import plain as plain_door

            plain = plain_door.request(argv)
        if plain is not None:
            # what plain.main needs before its handling of a stop begins
            import agentloop.console.command  # noqa: F401
            import agentloop.console.gone  # noqa: F401
        elif status is None:
            import agentloop.cli  # noqa: F401
        if not {"--help", "-h"} & set(argv) and (status is None or status[1]["as_json"]):
            # Every other command reads or writes JSON; the modules load on first use, but a
            # C extension's initialisation must happen while the stops wait (see above). A
            # --status printed as text reads an unchanged plan's state with the standard
            # library's JSON (agentloop.state.plain): orjson would bring dataclasses with it.
            import orjson  # noqa: F401
    except KeyboardInterrupt:  # one that came before the block
        _started_interrupted()
    if signal.sigpending() & {sig for sig in STOPS if not left_alone(sig)}:
        _started_interrupted()
    return blocked, status, plain


def _started_interrupted() -> NoReturn:
    sys.stderr.write(f"\n{STARTING_INTERRUPTED}\n")
    _exit(130)


def _exit(code: int) -> NoReturn:
    """Leave with the code agent-loop decided, whatever signal comes now. The interpreter's
    own shutdown puts the default signal actions back, so a second Ctrl+C (or the SIGTERM a
    terminal sends after it) would end us with a signal's status instead; nothing is left to
    do by now: the state is saved, every child is stopped, the lock is released."""
    for sig in STOPS:
        signal.signal(sig, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    main()
