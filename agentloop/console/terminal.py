"""On a terminal: each working lane's line kept live at the bottom of the screen (rich's Live
display, redrawn twice a second), the run's own lines printed above it. rich is imported here
only, so a run whose output goes to a file or a pipe never loads it."""

from __future__ import annotations

import atexit
from typing import IO, Any, Callable

from agentloop.console.lanes import Lanes


class TerminalView:
    """The live lines of the lanes that work, under the lines the run prints."""

    def __init__(self, out: IO[str], lanes: Lanes, clock: Callable[[], float]) -> None:
        from rich.console import Console
        from rich.live import Live

        self.lanes, self.clock = lanes, clock
        # The run's lines are printed as they are: no markup, colours, emoji or re-wrapping.
        self.console = Console(file=out, force_terminal=True, markup=False, highlight=False,
                               emoji=False, soft_wrap=True)
        self.live = Live(console=self.console, get_renderable=self._render, transient=True,
                         refresh_per_second=2, redirect_stdout=False, redirect_stderr=False)
        self._on = False
        atexit.register(self.close)  # however the run ends, the cursor comes back

    def print(self, text: str) -> None:
        """A line of the run, above the live lines."""
        self.console.print(text)

    def changed(self) -> None:
        """Show the live lines while a lane works, and take them away when none does."""
        busy = self.lanes.busy()
        if busy and not self._on:
            self.live.start()
            self._on = True
        elif not busy and self._on:
            self.close()

    def close(self) -> None:
        """Take the live lines away (the lines printed stay)."""
        if self._on:
            self._on = False
            self.live.stop()

    def _render(self) -> Any:
        from rich.text import Text

        lines = self.lanes.lines(self.clock())
        return Text("\n".join(lines), no_wrap=True, overflow="ellipsis")
