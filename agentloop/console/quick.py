"""`--status` before click is imported: the command a user types most, answered from the state
file in about the time Python takes to start.

Only argument lists whose meaning is beyond doubt come this way: `--status`, with or without a
plan, `--json` and `--rehearse`, in any order; a plan named like an option, or any other option,
goes to click (agentloop.cli), which says what it says about it. What they ask is then done by
the same function as click's `--status` (agentloop.console.dispatch.status), without the
options record a run needs: this module parses, nothing more. Settings are never read for
`--status` on either door (a settings file that cannot be read does not hide where the tasks
stand), so none of them can change what it prints."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

# typing for the checker only: --status imports this module, not typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

# The flags of a quick --status, and the option each one sets.
FLAGS = {"--status": "status", "--json": "as_json", "--rehearse": "rehearse"}


def status_request(args: list[str]) -> tuple[Path | None, dict[str, bool]] | None:
    """(the plan or None, the flags) when `args` is a plain `--status`, else None."""
    plans = [a for a in args if a not in FLAGS]
    if "--status" not in args or len(set(args)) != len(args) or len(plans) > 1:
        return None
    if plans and (not plans[0] or plans[0].startswith("-")):
        return None  # an option of any other kind, or a plan click must make sense of
    if not plans and "--rehearse" in args:
        return None  # the overview has no rehearsal: click says so
    flags = {name: flag in args for flag, name in FLAGS.items()}
    return (Path(plans[0]) if plans else None), flags


def main(plan: Path | None, flags: dict[str, bool], args: list[str]) -> NoReturn:
    """Answer the `--status` and exit with its code (agentloop.console.dispatch decides)."""
    # A short read that makes thousands of records and no cycles to free: the collector would
    # only walk them again and again as they are made, and the process ends in milliseconds.
    gc.disable()
    from agentloop.console.dispatch import last_resort, reported, status
    from agentloop.console.gone import steady
    from agentloop.console.stops import stopped_before_start

    sys.stdout, sys.stderr = steady(sys.stdout), steady(sys.stderr)  # a reader may go away

    def work() -> int:
        # No RunOptions: these three flags never conflict (agentloop.options.record.usage_problem
        # says so of each list status_request takes; tests/console/test_quick.py holds it).
        return status(plan, Path.cwd(), flags["as_json"], flags["rehearse"])

    try:
        code = reported(args, flags["as_json"], work)
    except KeyboardInterrupt:  # before the work began: nothing was read, nothing changed
        code = stopped_before_start()
    except BaseException as exc:  # noqa: BLE001 - the last line of defence, as in cli.main
        code = last_resort(exc)
    sys.exit(code)
