"""A command once its arguments are parsed, whichever door parsed them: click's (agentloop.cli)
or a plain run's, read before click is imported (agentloop.console.plain). Both hand over the
same things: the options' values (defaults included, as click converts them), the names of
those given on the command line, and the arguments as typed."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

from agentloop import left_alone
from agentloop.console.dispatch import dispatch, reported
from agentloop.console.gone import steady
from agentloop.console.stops import warn, write
from agentloop.errors import stop


def take_stops() -> None:
    """As a command's parsing begins, whichever door: its output steady for a reader that may
    go away, and SIGTERM and SIGHUP (a closed terminal, a dropped ssh) taking Ctrl+C's careful
    path: stop the agent, save, exit 130."""
    sys.stdout, sys.stderr = steady(sys.stdout), steady(sys.stderr)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if not left_alone(sig):
            signal.signal(sig, stop)


def run(tasks_md: Path | None, params: dict[str, Any], args: list[str],
        given: set[str]) -> int:
    """Do what the options ask; its exit code (an error said in one line, with its own)."""
    from agentloop.options.record import RunOptions, check_usage

    params = {**params, "command": tuple(args), "agent_given": "agent" in given}
    options = RunOptions.from_params(params)

    def work() -> int:
        # Settings shape runs; --status runs nothing and reads the state alone (a settings
        # file that cannot be read does not hide where the tasks stand).
        # --serve without a plan reads the same files (no plan's table): its port and host.
        reads_settings = not (params["status"] and not params["show_settings"])
        effective = _settings(tasks_md, params, given) if reads_settings and \
            (tasks_md is not None or params["serve"]) else None
        chosen = RunOptions.from_params({**params, **effective.values}) \
            if effective is not None else options
        check_usage(chosen)
        for note in effective.notes if effective is not None else ():
            warn(f"warning: {note}")
        if chosen.show_settings and effective is not None:
            _show_settings(effective, chosen.as_json)
            return 0
        return dispatch(tasks_md, Path.cwd(), chosen)

    return reported(args, options.as_json, work)


def _settings(tasks_md: Path | None, params: dict[str, Any], given: set[str]) -> Any:
    """The settings from every source, the command line's own first (agentloop.settings)."""
    from agentloop.settings.merge import resolve

    return resolve(params, given, tasks_md, Path.cwd())


def _show_settings(effective: Any, as_json: bool) -> None:
    from agentloop.settings import show

    if not as_json:
        write(show.text(effective))
        return
    from agentloop.console.render import SCHEMA  # every JSON document says its version

    write({"schema": SCHEMA, **show.as_json(effective)})
