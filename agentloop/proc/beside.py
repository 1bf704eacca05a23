"""Work started now in a thread of its own, its result waited for when it is needed: a command
that only reads runs beside what the caller does meanwhile (the history a fresh run reads while
the plan is parsed; git's signing setting while its identity is asked; the watchdog started
while the lane is made)."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def beside(work: Callable[[], T], name: str) -> Callable[[], T]:
    """`work` started now in a thread named `name`; the function that waits for its result (or
    raises its error). The caller goes on at once, and waits for the result before it looks at
    how many processes were started (a single command to run beside: proc.start, no thread)."""
    found: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            found.append(work())
        except BaseException as exc:  # handed to the caller, whatever it is
            failed.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()

    def result() -> T:
        # In steps: a stop that reached another thread (a signal goes to any thread that does
        # not block it) is raised here in the main thread between two, where one join that
        # waits on a stuck thread would never see it.
        while thread.is_alive():
            thread.join(0.05)
        if failed:
            raise failed[0]
        return found[0]
    return result


def agents_ready() -> Callable[[], None]:
    """What starting an agent needs, made ready in a thread beside what a run does before its
    first agent (the lane's creation, whose git the main thread waits for): the watchdog's
    shell started, libc's prctl found (agentloop.proc.reaper) and tempfile loaded (the agent's
    stderr file, agentloop.proc.streamed: with shutil, random and the compressors shutil
    loads, ~3 ms), a few milliseconds each that the first agent would wait for otherwise. The
    function waits for it."""
    from agentloop.proc.reaper import prctl
    from agentloop.proc.watchdog import watchdog

    def ready() -> None:
        watchdog.ready()  # False (it cannot run): the first agent finds that out again
        prctl()
        import tempfile  # noqa: F401
    return beside(ready, "agent-loop agents ready")
