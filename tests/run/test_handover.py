"""The controller answers a lane before it stops: a Ctrl+C that comes while it applies what a
lane handed over is let in once the answer is given, never in the middle of it."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from agentloop.proc.signals import held_back


def test_a_ctrl_c_during_an_answer_comes_after_it_even_with_lanes_running() -> None:
    done: list[str] = []
    stop = threading.Event()
    lane = threading.Thread(target=stop.wait, name="lane Backend")  # a lane thread alive
    lane.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with held_back():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the signal is in by now: Python checks between these
                    pass
                done.append("answered")
        assert done == ["answered"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        stop.set()
        lane.join()
