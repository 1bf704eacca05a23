"""git: a task's landing left running beside what its lane does next (LaneGit.finish_beside),
its fast-forward of the user's checkout in the run's landing thread, handed over and waited
for here; whether a finished task may land so, and what the lane's state (lane_state) learns
of it."""

from __future__ import annotations

import queue
import threading
from functools import partial
from typing import TYPE_CHECKING, Callable

from agentloop import proc
from agentloop.vcs.git import refs
from agentloop.vcs.protocol import Change

if TYPE_CHECKING:
    from agentloop.vcs.git.backend import GitVcs
    from agentloop.vcs.git.lane_state import LaneState, Pending
    from agentloop.vcs.git.mainline import GitMainLine


class Beside:
    """A task's landing left running beside what the lane does next (finish_beside): the lane
    commit `done`, made right on the main line's tip `done.base`, and its fast-forward in
    the run's landing thread. Waited for on an event, never by joining the thread: on this Python a
    join that Ctrl+C cut short takes the thread for ended, and the next join would not wait.

    The fast-forward is handed to the run's landing thread (_Worker) once the next task's
    agent has started (proc.after_next_stream), or when the landing is waited for: handed
    over at once, its git's start would hold that agent back (a start holds every thread
    until its child runs). Nothing is started meanwhile, so the lane's next begin
    (agentloop.vcs.git.quick.NextBegin) finds the count of processes as finish left it."""

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
            _WORKER.take(partial(self._run, work))
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
        """The fast-forward, in the landing thread, unless a stop gave it up first."""
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


class _Worker:
    """The run's one landing thread, started with its first landing beside and kept for the
    next ones: a thread of its own for each landing cost its start every task (the clone, its
    stack, and the main thread's wait, GIL and all, for the new thread to run: 0.2 ms, over a
    millisecond on a busy machine), right as the next agent starts. Landings come one at a
    time (a serial run's lane waits for one before it starts the next), each taken in turn."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def take(self, job: Callable[[], None]) -> None:
        """`job` run in the landing thread, started now if there is none (RuntimeError: no
        thread to be had). Queued first: a stop as the thread starts finds it there, for the
        thread to take up or Beside's stop handling to give up."""
        self._jobs.put(job)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                thread = threading.Thread(target=self._serve, name="agent-loop landing",
                                          daemon=True)
                thread.start()
                self._thread = thread

    def _serve(self) -> None:
        while True:
            self._jobs.get()()  # Beside._run: it raises nothing


_WORKER = _Worker()


# -- the lane's side: whether a finished task lands beside, and what its state learns ----------

def may_land(state: LaneState, main: GitMainLine, done: Change) -> bool:
    """Whether `done` would land by the fast-forward as things stand: the checkout is on
    the branch at the commit's parent (read off the git dir's files), and none of the
    commit's paths is among the user's uncommitted ones the check just saw."""
    if done.empty or not done.change_id or not done.base or state.looked is None \
            or not main.may_fast_forward():
        return False
    if refs.where(main.git_dir, main.common_dir) != (main.ref, done.base):
        return False
    return not set(done.files) & set(state.looked)


def start(state: LaneState, main: GitMainLine, work: GitVcs, done: Change) -> None:
    """`done`'s landing left running beside what the lane does next (may_land said it can)."""
    parent, sha = done.base, done.change_id
    before = proc.started()
    pending = Beside(done, lambda: main.fast_forward(parent, sha))
    work.carry(before)
    state.beside_started(pending)


def settle(state: LaneState, work: GitVcs) -> Change | None:
    """The landing that runs beside, waited for: its commit as it landed; None when the
    checkout refused it, or when none runs."""
    pending = state.beside
    if pending is None:
        return None
    landed = waited(pending, work)  # a Ctrl+C here leaves it to be waited for again
    state.beside_ended(landed)
    return pending.done if landed else None


def wait(state: LaneState, work: GitVcs) -> None:
    """Nothing lands, follows or leaves while a landing runs beside: it is waited for
    (its result stays for settle)."""
    if state.beside is not None:
        waited(state.beside, work)


def waited(pending: Pending, work: GitVcs) -> bool:
    """`pending.wait()`; a landing no agent started begins now, its git in the user's
    checkout, never in the lane's worktree: the lane's next begin holds (quick.NextBegin)."""
    before = proc.started()
    landed = pending.wait()
    work.carry(before)
    return landed
