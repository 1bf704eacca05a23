"""A run's command line read before click is imported: click and what it brings (some ten
milliseconds of a run's start) are not on the way to the first agent of `agent-loop PLAN` with
the options a run usually has.

The options are agentloop.options.table's, the ones click's command is made of. Only a command
line whose every word this module understands comes this way: one plan, and options each
written as itself (`--vcs git`, never `--vcs=git`), with values it converts exactly as click
would (agentloop.options.values: a name, a choice, a number in plain digits within the option's
range, a duration, NAME=VALUE, a variable's name, a model's rates). Anything
else, a value it is not sure of included, goes to click (agentloop.cli), which says what it
says about it. What this module hands over, the options' values with their defaults and the
names of those given, is what click hands over (tests/cli/test_plain.py compares the two), and
the same function does the rest (agentloop.console.command.run): this module parses, nothing
more."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentloop.options.table import OPTIONS, Option

# typing for the checker only
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

Request = tuple[Path, dict[str, "Any"], set[str]]


def request(args: list[str]) -> Request | None:
    """(the plan, every option's value, the names given) when click would read `args` so,
    else None."""
    words: dict[str, tuple[Option, bool]] = {}  # each word, its option, a flag's value
    for option in OPTIONS:
        words.update({word: (option, True) for word in option.opts})
        words.update({word: (option, False) for word in option.secondary})
    given: list[tuple[Option, Any]] = []  # each option as written, its value as typed
    plans = []
    rest = iter(args)
    try:
        for word in rest:
            if not word.startswith("-"):
                plans.append(word)
                continue
            option, flag = words[word]  # KeyError: not an option's word as itself
            value: Any = flag
            if not option.is_flag:
                value = next(rest)  # StopIteration: click says the value is missing
                if value.startswith("-"):
                    return None  # click reads it as the value; a typo, most likely
            given.append((option, value))
    except (KeyError, StopIteration):
        return None  # --help and --version among them: their words are no option's here
    if len(plans) != 1 or not _readable(plans[0]):
        return None
    from agentloop.options.values import NotSure  # a plan's line only: not for --help

    values: dict[str, Any] = {}
    try:
        for option, value in given:
            if not option.is_flag:
                value = _converted(option, value)
            values[option.name] = (*values.get(option.name, ()), value) if option.multiple \
                else value
        names = set(values)
        for option in OPTIONS:
            if option.name not in values:
                values[option.name] = _default(option)
    except NotSure:
        return None
    return Path(plans[0]), values, names


def _converted(option: Option, text: Any) -> Any:
    """A value as click's type for it converts it, when agentloop.options.values is sure of
    how."""
    from agentloop.options.values import converted

    if option.type is not None and option.type.kind == "agent" and \
            text == option.kwargs.get("default"):
        return text  # as click's type takes it: unchecked, so no table is read
    return converted(option.type, text)


def _default(option: Option) -> Any:
    """The value click gives an option not given: its default, converted by its type."""
    default = option.kwargs.get("default")
    if option.is_flag:
        return bool(default)
    if default is None:
        return () if option.multiple else None
    return _converted(option, default)


def _readable(plan: str) -> bool:
    """Whether click's Path takes the plan as it is: it fails one there but unreadable."""
    if not plan:
        return False
    try:
        os.stat(plan)
    except OSError:
        return True
    return os.access(plan, os.R_OK)


def main(asked: Request, args: list[str]) -> NoReturn:
    """Do the run as agentloop.cli.main does once click has parsed; exit with its code."""
    from agentloop.console.command import run, take_stops
    from agentloop.console.dispatch import last_resort
    from agentloop.console.stops import stopped_before_start

    take_stops()
    plan, values, given = asked
    try:
        code = run(plan, values, args, given)
    except SystemExit:
        raise
    except KeyboardInterrupt:  # before the command itself began: nothing was changed
        code = stopped_before_start()
    except BaseException as exc:  # noqa: BLE001 - the last line of defence, as in cli.main
        code = last_resort(exc)
    sys.exit(code)
