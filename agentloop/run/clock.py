"""One clock for waits and timeouts, so tests can run hours of backoff in milliseconds."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What the runner asks of time."""

    def monotonic(self) -> float:
        """Seconds for measuring durations."""

    def time(self) -> float:
        """Unix seconds, for reset times the agent reports."""

    def sleep(self, seconds: float) -> None:
        """Wait; Ctrl+C must end the wait at once (KeyboardInterrupt)."""


class SystemClock:
    """The real clock. time.sleep returns early with KeyboardInterrupt on Ctrl+C."""

    def monotonic(self) -> float:
        """time.monotonic()."""
        return time.monotonic()

    def time(self) -> float:
        """time.time()."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        """time.sleep(), never negative."""
        if seconds > 0:
            time.sleep(seconds)
