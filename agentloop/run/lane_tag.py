"""What a parallel run's events say about lanes: each lane emits from a thread of its own, and
every event it emits carries its group, so events.jsonl says which lane did what and the console
can prefix its lines."""

from __future__ import annotations

import threading

from agentloop.ondemand import dataclass as on_first_use

_where = threading.local()


@on_first_use(frozen=True)  # a plain run never makes one (agentloop.ondemand)
class LaneNote:
    """Something a parallel run tells about its lanes: a landing that waits for the user's
    edits, a wind-down asked for from another terminal."""

    text: str
    # A group stopped or the run winding down: said on stderr too once stdout is gone (`| head`
    # ended), as a person still needs it then (agentloop.console.live).
    stop: bool = False


def set_lane(group: str) -> None:
    """The events this thread emits from now on are the lane of `group`'s."""
    _where.group = group


def lane() -> str:
    """The group whose lane emits from this thread; "" outside a parallel run's lanes."""
    return getattr(_where, "group", "")
