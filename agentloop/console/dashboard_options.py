"""The dashboard's options (--serve, --report, --notify and the server's address) as the
command line declares them; what they do lives in agentloop.dashboard, imported only when one
of them is used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

import click

from agentloop.console.stops import warn

if TYPE_CHECKING:
    from agentloop.run.events import Emit

F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")

_OPTIONS = (
    click.option("--serve", is_flag=True,
                 help="Follow the run in the browser: prints the dashboard's address (with its "
                      "token). Without TASKS_MD: every plan of the repository, as runs started "
                      "elsewhere go."),
    click.option("--serve-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
                 help="The dashboard's port [default: a free one]."),
    click.option("--serve-host", default=None, metavar="HOST",
                 help="The address the dashboard listens on [default: 127.0.0.1, this machine "
                      "only]."),
    click.option("--report", metavar="FILE", default=None,
                 help="Write the plan's state and history as one standalone HTML file (- for "
                      "standard output)."),
    click.option("--notify", multiple=True, metavar="URL",
                 help="Tell this service (an apprise URL: ntfy://, slack://, mailto://, "
                      "json://...) when the run ends, a task fails, a conflict needs a person, "
                      "a usage limit means a long wait or the budget stops the run; repeatable."),
)


def dashboard_options(command: F) -> F:
    """Add the dashboard's options to `command`, in --help's order."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def with_notices(urls: tuple[str, ...], plan: str, emit: Emit, run: Callable[[Emit], T]) -> T:
    """`run` given `emit`; with `urls` (the notify setting), its events also go to the
    notifier (agentloop.dashboard.notify, imported only then)."""
    if not urls:
        return run(emit)
    from agentloop.dashboard.notify import notifying

    return notifying(urls, plan, warn, emit, run)
