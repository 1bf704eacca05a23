"""Questions for the person at the terminal, before a run spends what they may not expect."""

from __future__ import annotations

import sys
from typing import Callable


def interactive() -> bool:
    """Whether a person can answer a question: stdin is a terminal (CI's is not)."""
    return sys.stdin.isatty()


def reset_allowed(redone: Callable[[], int]) -> bool:
    """Whether a --reset may go on: in a terminal, ask before the agent does (and bills) done
    tasks again (`redone`: how many); with no one to ask, it goes on as asked."""
    if not interactive():
        return True
    count = redone()
    if not count:
        return True
    import click  # the question's prompt: a --reset with no one to ask imports no click

    try:
        return click.confirm(f"--reset archives the state and runs the plan again: {count} "
                             f"done task(s) will be done again by the agent, and paid for "
                             f"again. Go on?", default=False, err=True)
    except click.exceptions.Abort:  # Ctrl+C or end of input at the question: a no
        return False
