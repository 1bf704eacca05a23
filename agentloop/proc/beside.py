"""Work started now in a thread of its own, its result waited for when it is needed: a command
that only reads runs beside what the caller does meanwhile (the history a fresh run reads while
the plan is parsed; git's signing setting while its identity is asked)."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def beside(work: Callable[[], T], name: str) -> Callable[[], T]:
    """`work` started now in a thread named `name`; the function that waits for its result (or
    raises its error). The caller goes on at once, not even waiting for the thread to start its
    process: it waits for the result before it looks at how many processes were started
    (agentloop.vcs.git.quick.NextBegin counts them)."""
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
        thread.join()
        if failed:
            raise failed[0]
        return found[0]
    return result
