"""`--status` before click is imported: the command a user types most, answered from the state
file in about the time Python takes to start.

Only argument lists whose meaning is beyond doubt come this way: `--status`, with or without a
plan, `--json` and `--rehearse`, in any order; a plan named like an option, or any other option,
goes to click (agentloop.cli), which says what it says about it. What they ask is then done by
the same dispatch as every command (agentloop.console.dispatch): this module parses, nothing
more. Settings are never read for `--status` on either door (a settings file that cannot be read
does not hide where the tasks stand), so none of them can change what it prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from agentloop.options import RunOptions

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


def options_of(args: list[str]) -> tuple[Path | None, RunOptions] | None:
    """The plan and the options click would make of `args`, when it is a plain `--status`."""
    found = status_request(args)
    if found is None:
        return None
    from agentloop.options import RunOptions

    plan, flags = found
    return plan, RunOptions(status=flags["status"], as_json=flags["as_json"],
                            rehearse=flags["rehearse"], command=tuple(args))


def main(plan: Path | None, options: RunOptions) -> NoReturn:
    """Answer the `--status` and exit with its code (agentloop.console.dispatch decides)."""
    from agentloop.console.dispatch import dispatch, last_resort, reported
    from agentloop.console.gone import steady
    from agentloop.options import check_usage

    sys.stdout, sys.stderr = steady(sys.stdout), steady(sys.stderr)  # a reader may go away

    def work() -> int:
        check_usage(options)
        return dispatch(plan, Path.cwd(), options)

    try:
        code = reported(list(options.command), options.as_json, work)
    except KeyboardInterrupt:  # before the work began: nothing was read, nothing changed
        sys.stderr.write("\nagent-loop: interrupted; nothing was changed\n")
        code = 130
    except BaseException as exc:  # noqa: BLE001 - the last line of defence, as in cli.main
        code = last_resort(exc)
    sys.exit(code)
