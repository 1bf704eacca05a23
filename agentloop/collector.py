"""Python's garbage collector while agent-loop starts.

Start-up makes objects that live as long as the process: modules, their classes and functions,
click's command, the options, the plan. Each young collection walks those made since the last
one and keeps every one of them, so before a run's first agent the collector ran about fifty
times (a few in the oldest but one generation) and found nothing to free: about 7 ms of a
150 ms start on a quiet machine. It collects rarely while agent-loop starts (hold: the youngest
generation waits for many times its usual count, so a cycle made meanwhile is still freed, only
later), and as usual from the first agent's start on, what the start made left out of its walks
for good (release, agentloop.run.start): a 10-task run's collections took about 7 ms, and take
a fraction of one. A command that starts no agent keeps the rare collections for its life; one
that runs long (`--serve`, `--status --follow`) holds at most tens of thousands of young
objects more before the collector looks at them."""

from __future__ import annotations

import gc

# The youngest generation's count before a collection while agent-loop starts (Python's own:
# 700 allocations of container objects net of those freed).
STARTING = 50_000
_usual: tuple[int, ...] | None = None


def hold() -> None:
    """Collect rarely from now on, until release()."""
    global _usual
    if _usual is None:
        _usual = gc.get_threshold()
        gc.set_threshold(max(STARTING, _usual[0]), *_usual[1:])


def release() -> None:
    """Collect as usual again, leaving out for good what the start made (raises nothing:
    called once an agent has started). Without the freeze, the first collection would walk
    all of it at once, about as long as the collections held back took."""
    global _usual
    if _usual is not None:
        gc.freeze()
        gc.set_threshold(*_usual)
        _usual = None
