"""A serial lane's landing beside (agentloop.vcs.git.landing_beside.Beside) starts once the next
task's agent has, or once it is waited for: neither its thread nor its git holds that agent's
start back, and the lane's next begin finds the count of processes as finish left it."""

from __future__ import annotations

from agentloop import proc
from agentloop.vcs.git.landing_beside import Beside
from agentloop.vcs.protocol import Change

DONE = Change(change_id="c" * 40, commit_id="c" * 40, base="b" * 40)


def test_the_landing_starts_once_the_next_agent_has() -> None:
    ran: list[int] = []

    def work() -> bool:
        ran.append(proc.started())
        return True
    beside = Beside(DONE, work)
    before = proc.started()
    assert not ran and not beside.landed()  # nothing started yet, no process counted
    proc.stream(["true"], lambda line: None)
    assert beside.wait() and beside.landed()
    assert ran == [before + 1]  # after the agent's start


def test_a_landing_waited_for_before_any_agent_runs_then() -> None:
    refused = Beside(DONE, lambda: False)
    assert refused.wait() is False and not refused.landed()
    ran: list[bool] = []
    beside = Beside(DONE, lambda: ran.append(True) or True)
    assert beside.wait() and ran == [True]
    proc.stream(["true"], lambda line: None)  # the hook left behind starts nothing again
    assert ran == [True]


class _StopOnRelease:
    """A lock whose first release raises KeyboardInterrupt: a stop handled as the lock is let
    go, which is where Python runs a signal's handler after a `with` block's body."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self.stops = 1

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        if self.stops:
            self.stops -= 1
            raise KeyboardInterrupt


def test_a_stop_as_the_landing_takes_its_work_gives_it_up_and_no_wait_hangs() -> None:
    import threading

    import pytest

    ran: list[bool] = []
    beside = Beside(DONE, lambda: ran.append(True) or True)
    beside._lock = _StopOnRelease()  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        beside._start()
    # The wait a stopped run makes for its landing ends at once, the landing given up (the
    # task's record, `landing`, has the next run land it); it waited for ever before.
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(beside.wait()), daemon=True)
    waiter.start()
    waiter.join(5)
    assert waited == [False] and not ran
