"""agentloop.proc.signals: the blocks that hold the run's stop signals back."""

from __future__ import annotations

import signal
from types import FrameType

import pytest

from agentloop.proc import signals


def _refused(*_args: object) -> None:
    raise AssertionError("the signal module's wrapper was called")


def test_held_back_swaps_handlers_without_the_modules_wrappers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """held_back, opened several times a task, swaps the handlers in and back through the C
    functions: the signal module's wrappers try to make an enum of each Python handler they
    hand back (a ValueError raised and caught every time), ten times the swap's own cost. A
    SIGTERM inside still comes in once the block is done, to the handler that was there."""
    came: list[int] = []

    def handler(number: int, _frame: FrameType | None) -> None:
        came.append(number)

    before = signal.signal(signal.SIGTERM, handler)
    try:
        monkeypatch.setattr(signal, "signal", _refused)
        monkeypatch.setattr(signal, "getsignal", _refused)
        with signals.held_back():
            signal.raise_signal(signal.SIGTERM)
            assert came == []  # held back
        assert came == [signal.SIGTERM]
        monkeypatch.undo()
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGTERM, before)


def test_hangup_settles_the_task_puts_the_hangup_handler_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The block around each task's attempt puts SIGHUP's handler back as it found it, with
    no call of the signal module's wrappers."""
    def handler(_number: int, _frame: FrameType | None) -> None:
        pass

    before = signal.signal(signal.SIGHUP, handler)
    try:
        monkeypatch.setattr(signal, "signal", _refused)
        with signals.hangup_settles_the_task():
            pass
        monkeypatch.undo()
        assert signal.getsignal(signal.SIGHUP) is handler
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGHUP, before)
