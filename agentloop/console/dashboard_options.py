"""The notices a run sends when the `notify` setting names services (agentloop.dashboard.notify,
imported only then). The dashboard's options themselves (--serve, --report, --notify and the
server's address) are declared with the others, in agentloop.options.table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

from agentloop.console.stops import warn

if TYPE_CHECKING:
    from agentloop.run.events import Emit

T = TypeVar("T")


def with_notices(urls: tuple[str, ...], plan: str, emit: Emit, run: Callable[[Emit], T]) -> T:
    """`run` given `emit`; with `urls` (the notify setting), its events also go to the
    notifier (agentloop.dashboard.notify, imported only then)."""
    if not urls:
        return run(emit)
    from agentloop.dashboard.notify import notifying

    return notifying(urls, plan, warn, emit, run)
