"""What a run makes beside its first agent: the watchdog and prctl that agent needs, the records
its task makes (agentloop.ondemand) and the modules its end loads, in threads that take the
interpreter while the main thread waits on git and on the agent, not on the main thread's way to
that agent."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from agentloop import proc
from agentloop.proc.beside import agents_ready

if TYPE_CHECKING:
    from collections.abc import Callable


def ready_beside(lane: str | None) -> None:
    """What the first agent needs (the watchdog, prctl: agentloop.proc.beside.agents_ready) and
    the records its task makes and its lane's module (make_ahead; `lane`: the VCS's kind for a
    run in lanes), made in threads started as the run first waits on git
    (proc.during_next_wait: a lane's `git worktree add`, or a checkout's own git), and
    waited for as that agent starts (proc.before_next_stream), or started then. Started before,
    they took the GIL from the main thread's own set-up (the run's first records, the lanes'
    sweep), which then waited for them, while nothing ran beside the lane's git. A stop or an
    error before the agent has no use for them, and a thread stuck in an import
    (agentloop.errors.stop) would keep the run from ending: not waited for then."""
    begun: list[Callable[[], None]] = []
    once = threading.Lock()

    def begin() -> None:
        with once:
            if not begun:
                begun.append(agents_ready())
                make_ahead(lane)

    def ready() -> None:
        begin()
        begun[0]()
    proc.during_next_wait(begin)
    proc.before_next_stream(ready)


def make_ahead(lane: str | None) -> None:
    """Make the records a run's first task makes from its first agent's start to its end
    (agentloop.ondemand) in a thread of their own, started as the lane is made: about a
    millisecond a class that the main thread, waiting for the lane's git and then for the
    agent, need not spend; and, for a run in lanes, load the module of a lane of kind `lane`
    (agentloop.vcs.choose.open_lane's), which the main thread would load once the lane is made,
    on the first agent's way. Those the agent's start makes first; those its output and its end
    make once it has started (proc.after_next_stream), while the main thread waits for that
    output: made before, they took the interpreter from the main thread's own way to the
    agent. Nothing waits for the thread: a class it has not made yet when it is needed is made
    by the thread that needs it (ondemand.made takes one at a time)."""
    started = threading.Event()
    proc.after_next_stream(started.set)
    load = None
    if lane is not None:
        from agentloop.vcs.choose import load_lane_ahead
        load = load_lane_ahead(lane)
    thread = threading.Thread(target=_made_ahead, args=(started, load, lane),
                              name="agent-loop records ahead", daemon=True)
    try:
        thread.start()
    except BaseException:
        # A thread that cannot start (a limit on threads) would leave the lane's opening
        # waiting for a load claimed above that nothing does: done here instead.
        if load is not None:
            load()
        raise


# How long the records of an agent's end wait for it to start: a run that ends before any
# agent leaves the thread nothing to wait for (it makes them then, and ends).
_AGENT_STARTS_WITHIN = 60.0


# The modules a run loads only once its tasks are done, where they are used: the closing lines'
# quoting (shlex: a pattern compiled as it loads) and, for a run in git lanes, the removal of its
# last lane. Loaded while the first agent works, they are off the way from the run's last
# landing to its exit, which the main thread goes with nothing left to load.
_AT_THE_END = ("shlex",)
_AT_A_GIT_LANE_S_END = ("agentloop.vcs.git.teardown",)


# The records the run's caller makes once the run has ended (agentloop.app's RunResult: a layer
# this module does not import), named by that caller before the run starts (make_ahead_too).
_AT_THE_CALLER_S_END: list[type] = []


def make_ahead_too(cls: type) -> None:
    """`cls`, a record the caller of a run makes once it has ended, made with the run's own by
    the records-ahead thread while the first agent works (make_ahead), not on the main thread's
    way from the run's last landing to its exit."""
    if cls not in _AT_THE_CALLER_S_END:
        _AT_THE_CALLER_S_END.append(cls)


# The modules the run loads where its first task's end uses them, named by the run's set-up
# before its first agent starts (load_ahead_too): the commit-message distiller.
_AT_THE_FIRST_TASK_S_END: list[str] = []


def load_ahead_too(module: str) -> None:
    """`module`, which this run uses once its first agent is done (imported there), loaded by
    the records-ahead thread while that agent works (make_ahead), not on the main thread's
    way to it."""
    if module not in _AT_THE_FIRST_TASK_S_END:
        _AT_THE_FIRST_TASK_S_END.append(module)


def _warm_ups(lane: str | None) -> tuple[str, ...]:
    """The modules the records-ahead thread loads once the records are made (_warmed)."""
    return ("agentloop.run.tick_boxes", *_AT_THE_FIRST_TASK_S_END, *_AT_THE_END,
            *(_AT_A_GIT_LANE_S_END if lane == "git" else ()))


def _made_ahead(started: threading.Event, load: Callable[[], None] | None,
                lane: str | None) -> None:
    try:
        _make(started, load, lane)
    finally:
        if load is not None:   # once in any case: the lane's opening waits for it
            load()


def _make(started: threading.Event, load: Callable[[], None] | None,
          lane: str | None) -> None:
    from agentloop.agents import Activity, AgentResult
    from agentloop.ondemand import made
    from agentloop.proc.read_output import Deadline
    from agentloop.proc.streamed import Streamed
    from agentloop.run import decisions, events
    from agentloop.run.controller import LaneEnded
    from agentloop.run.final_message import Report
    from agentloop.run.fixes import Outcome
    from agentloop.run.names_now import Names
    from agentloop.state.receipts import Receipt
    from agentloop.vcs.choose import GitLaneRecord, Listed

    # In the order the first task needs them; the lane's module once its record is made.
    for cls in (events.RunStarted, GitLaneRecord, decisions.RunBegun, decisions.Opened,
                decisions.MayStart, events.TaskStarted, events.AgentStarted, Streamed, Deadline,
                None, Activity, events.AgentActivity, AgentResult, events.AgentFinished, Listed,
                Report, Outcome, Receipt, decisions.Completed, events.TaskFinished, LaneEnded,
                Names, decisions.RunEnded, events.RunFinished, *_AT_THE_CALLER_S_END):
        if cls is None:   # the agent's start made: the rest while it runs
            started.wait(_AGENT_STARTS_WITHIN)
            continue
        made(cls)
        if cls is GitLaneRecord and load is not None:
            load()
        # The main thread takes the interpreter at once when it wakes (its git, its agent's
        # output): without the pause it could wait out a whole switch interval (5 ms).
        time.sleep(0)
    # Then, the agent still at work, the modules the task's end imports where they are used
    # (agentloop.run.ledger), and the run's end (_AT_THE_END), kept off the way to the first
    # agent. Only a warm-up: an import
    # that fails here fails again, and is said, where the module is used; a stop never reaches
    # this thread (Python raises it in the main thread), which nothing waits for and whose
    # modules are whole or absent (a failed import leaves none behind); the main thread, if
    # first, imports them itself (one import at a time). A stop's own path imports nothing
    # new (agentloop.run.loop keeps its end at the top): a thread stuck in an import holds
    # Python's import lock. Named now, the agent started: the run's set-up has named its own
    # (load_ahead_too), after the lane's git that started this thread maybe.
    _warmed(_warm_ups(lane))


def _warmed(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            __import__(name)   # as an import statement does (audit hooks see it too)
        except Exception:  # said where it is used (see _made_ahead)
            continue
        time.sleep(0)
