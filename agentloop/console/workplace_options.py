"""Where the agent works, as the command line declares it: its own working copy (a lane) or the
user's checkout, what a new lane is given of the ignored files, and how long a finished task
waits for the user's edits before its group is held. What they do lives in agentloop.run.
scheduler (where) and agentloop.vcs.landing (the wait)."""

from __future__ import annotations

from typing import Callable, TypeVar

import click

from agentloop.settings.schema import Duration

F = TypeVar("F", bound=Callable[..., object])

LANE_WAIT = 600.0  # ten minutes: a user who steps away for coffee is not held


_OPTIONS = (
    click.option("--workplace", type=click.Choice(["lane", "checkout"]), default="lane",
                 show_default=True,
                 help="Where the agent works: `lane`, a working copy of its own, each finished "
                      "task landing on your branch, so your own edits meanwhile are never taken "
                      "into a task; `checkout`, your checkout itself (no copy to set up, but "
                      "what you change while a task runs may be committed with it)."),
    click.option("--lane-copy", multiple=True, metavar="PATH",
                 help="An ignored file or folder copied from your checkout into each new lane "
                      "(.env, say); repeatable."),
    click.option("--lane-link", multiple=True, metavar="PATH",
                 help="An ignored file or folder each new lane links to in your checkout "
                      "(node_modules, say); repeatable."),
    click.option("--lane-setup", metavar="CMD", default=None,
                 help="A shell command run once in each new lane, after the copies and links "
                      "(npm ci, say)."),
    click.option("--lane-wait", type=Duration(), default=LANE_WAIT, metavar="DURATION",
                 help="How long a finished task waits for your uncommitted edits to files it "
                      "changed before its group is held (seconds, or 90s, 10m, 1h) "
                      "[default: 10m]."),
)


def workplace_options(command: F) -> F:
    """Add the workplace options to `command`, in --help's order."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command
