"""git: a task's landing left running beside what its lane does next (LaneGit.finish_beside),
its fast-forward of the user's checkout in a thread of its own, started and waited for here."""

from __future__ import annotations

import threading
from typing import Callable

from agentloop import proc
from agentloop.vcs.protocol import Change


class Beside:
    """A task's landing left running beside what the lane does next (finish_beside): the lane
    commit `done`, made right on the main line's tip `done.base`, and its fast-forward in a
    thread of its own. Waited for on an event, never by joining the thread: on this Python a
    join that Ctrl+C cut short takes the thread for ended, and the next join would not wait.

    The thread starts once the next task's agent has (proc.after_next_stream), or when the
    landing is waited for: started at once, its start and its git's would hold that agent back
    (a thread takes the GIL to begin, and a start holds every thread until its child runs).
    Nothing is started meanwhile, so the lane's next begin (agentloop.vcs.git.quick.NextBegin)
    finds the count of processes as finish left it."""

    def __init__(self, done: Change, work: Callable[[], bool]) -> None:
        self.done = done
        self._ended = threading.Event()
        self._landed = False
        self._work: Callable[[], bool] | None = work
        # Whether the thread took the work up, or a stop that cut its start short gave it up
        # first: one of the two, under the lock, never both.
        self._lock = threading.Lock()
        self._taken = self._given_up = False
        proc.after_next_stream(self._start)

    def _start(self) -> None:
        work = None
        # One `try` around the taking too: a stop is handled as the lock is let go, and one
        # that came after the work was taken must give it up, or a wait would wait for ever.
        try:
            with self._lock:
                work, self._work = self._work, None
            if work is None:
                return  # started already
            threading.Thread(target=self._run, args=(work,), name="agent-loop landing",
                             daemon=True).start()
        except BaseException as cut:
            if work is None:
                raise  # nothing taken: a later wait starts it
            # No thread to be had, or a stop cut its start short: unless the thread took the
            # work up already, it never runs, and the commit lands the longer way (or, after
            # a stop, the next run lands the task its record names `landing`).
            with self._lock:
                if not self._taken:
                    self._given_up = True
                    self._ended.set()
            if not isinstance(cut, RuntimeError):
                raise

    def _run(self, work: Callable[[], bool]) -> None:
        try:
            with self._lock:
                if self._given_up:
                    return
                self._taken = True
            self._landed = work()
        except Exception:  # noqa: BLE001 - a landing that failed lands the longer way
            self._landed = False
        finally:
            self._ended.set()

    def landed(self) -> bool:
        """Whether the fast-forward has ended, landed (asked without waiting)."""
        return self._ended.is_set() and self._landed

    def wait(self) -> bool:
        """Wait for the fast-forward; False when git refused it (or could not run, or a stop
        cut its thread's start short before it took the work up: then it never runs)."""
        self._start()
        self._ended.wait()
        return self._landed
