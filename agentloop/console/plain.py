"""A run's command line read before click is imported: click and what it brings (some ten
milliseconds of a run's start) are not on the way to the first agent of `agent-loop PLAN` with
the options a run usually has.

The options are agentloop.option_table's, the ones click's command is made of. Only a command
line whose every word this module understands comes this way: one plan, and options each
written as itself (`--vcs git`, never `--vcs=git`), with values it converts exactly as click
would (a name, a choice, a whole number or a plain decimal within the option's range). Anything
else, a value it is not sure of included, goes to click (agentloop.cli), which says what it
says about it. What this module hands over, the options' values with their defaults and the
names of those given, is what click hands over (tests/cli/test_plain.py compares the two), and
the same function does the rest (agentloop.console.command.run): this module parses, nothing
more."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentloop.option_table import OPTIONS, Option, Type

# typing for the checker only
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

Request = tuple[Path, dict[str, "Any"], set[str]]


class _NotSure(Exception):
    """A value click may read otherwise than this module would: click reads the command."""


def request(args: list[str]) -> Request | None:
    """(the plan, every option's value, the names given) when click would read `args` so,
    else None."""
    words: dict[str, tuple[Option, bool]] = {}  # each word, its option, a flag's value
    for option in OPTIONS:
        words.update({word: (option, True) for word in option.opts})
        words.update({word: (option, False) for word in option.secondary})
    values: dict[str, Any] = {}
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
                value = _converted(option, value)
            values[option.name] = (*values.get(option.name, ()), value) if option.multiple \
                else value
        if len(plans) != 1 or not _readable(plans[0]):
            return None
        given = set(values)
        for option in OPTIONS:
            if option.name not in values:
                values[option.name] = _default(option)
    except (KeyError, StopIteration, _NotSure):
        return None
    return Path(plans[0]), values, given


def _converted(option: Option, text: Any) -> Any:
    """A value as click's type for it converts it, when this module is sure of how."""
    kind = option.type.kind if option.type is not None else "text"
    if kind == "text" and isinstance(text, str):
        return text
    if kind == "choice" and text in option.type.choices:  # type: ignore[union-attr]
        return text
    if kind == "agent" and text != "rehearse":  # a mode, not an agent (settings.schema)
        if text == option.kwargs.get("default"):
            return text  # as click's type takes it: unchecked, so no table is read
        from agentloop.agents import AGENTS

        if text in AGENTS:
            return text
    if kind in ("int", "float", "duration"):
        number = _number(text, whole=kind == "int")
        if _within(number, option.type):  # type: ignore[arg-type]
            return number
    raise _NotSure


def _number(text: Any, whole: bool) -> int | float:
    """A number written in plain digits (`5`, `2.5`), or a default as the table gives it."""
    if isinstance(text, str):
        digits = text if whole else text.replace(".", "", 1)
        if not (digits.isascii() and digits.isdigit()) or text.endswith(".") \
                or text.startswith("."):
            raise _NotSure
    elif isinstance(text, bool) or not isinstance(text, (int, float)):
        raise _NotSure
    try:
        return int(text) if whole else float(text)
    except ValueError:  # more digits than int() takes from text (sys.get_int_max_str_digits)
        raise _NotSure from None


def _within(number: float, type_: Type) -> bool:
    return (type_.low is None or number >= type_.low) and \
        (type_.high is None or number <= type_.high)


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

    take_stops()
    plan, values, given = asked
    try:
        code = run(plan, values, args, given)
    except SystemExit:
        raise
    except KeyboardInterrupt:  # before the command itself began: nothing was changed
        sys.stderr.write("\nagent-loop: interrupted; nothing was changed\n")
        code = 130
    except BaseException as exc:  # noqa: BLE001 - the last line of defence, as in cli.main
        code = last_resort(exc)
    sys.exit(code)
