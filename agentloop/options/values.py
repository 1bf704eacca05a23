"""An option's value converted as its click type converts it, without click (some ten
milliseconds of a start): the command line of a plain run (agentloop.console.plain) and the
values of settings files and AGENT_LOOP_* variables (agentloop.settings.schema) come this way.

Only what this module is sure of: a value it takes, it converts exactly as click's type for it
would (tests/cli/test_plain.py and tests/settings compare the two); any other raises NotSure,
and click's type reads it, saying what it says about it. The rules of our own types (`--env`'s
NAME=VALUE, `--price`'s rates, a duration) are here, once: click's types for them
(agentloop.settings.click_types) say an Invalid's message as their error.

Imports nothing at its start: a plain run reads it on its way to the first agent."""

from __future__ import annotations

# typing for the checker only: a plain run imports this module before typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agentloop.options.table import Type


class NotSure(Exception):
    """A value click may read otherwise than this module would: click's type reads it."""


class Invalid(NotSure):
    """A value one of our own types refuses, and why, in the words its click type fails with."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# click.BOOL's words (click 8.1 on), as written; any other spelling (`True`, ` yes`) goes to
# click, which strips and lower-cases it.
_BOOLS = {"1": True, "0": False, "yes": True, "no": False, "true": True, "false": False,
          "on": True, "off": False, "t": True, "f": False, "y": True, "n": False}
# Compiled by `re` when first asked for: most starts never do.
_NAME = r"[A-Za-z_][A-Za-z0-9_]*\Z"
_DURATION = r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*\Z"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def converted(type_: Type | None, value: Any, flag: bool = False) -> Any:
    """`value` as click's type of an option converts it: `type_` the option's (None: a
    string), `flag` a flag's (click.BOOL); NotSure when this module cannot vouch for that."""
    if flag:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value in _BOOLS:
            return _BOOLS[value]
        raise NotSure
    kind = type_.kind if type_ is not None else "text"
    if kind == "text" and isinstance(value, str):
        return value
    if kind == "choice" and value in type_.choices:  # type: ignore[union-attr]
        return value
    if kind == "agent" and value != "rehearse":  # a mode, not an agent (--rehearse)
        from agentloop.agents import AGENTS

        if isinstance(value, str) and value in AGENTS:
            return value
    if kind in ("int", "float"):
        number = _number(value, whole=kind == "int")
        if _within(number, type_):  # type: ignore[arg-type]
            return number
    if kind in _OURS:
        return _OURS[kind](value)
    raise NotSure


def _number(text: Any, whole: bool) -> int | float:
    """A number written in plain digits (`5`, `2.5`), or one a table or a file gives."""
    if isinstance(text, str):
        digits = text if whole else text.replace(".", "", 1)
        if not (digits.isascii() and digits.isdigit()) or text.endswith(".") \
                or text.startswith("."):
            raise NotSure
    elif isinstance(text, bool) or not isinstance(text, (int, float)):
        raise NotSure
    try:
        return int(text) if whole else float(text)
    except ValueError:  # more digits than int() takes from text (sys.get_int_max_str_digits)
        raise NotSure from None


def _within(number: float, type_: Type) -> bool:
    # inf is within a range with no upper bound and nan within any, and click_types.Number
    # refuses both: left to it.
    return abs(number) < float("inf") and (type_.low is None or number > type_.low or (
        number == type_.low and not type_.low_open)) and \
        (type_.high is None or number <= type_.high)


def assignment(value: Any) -> tuple[str, str]:
    """NAME=VALUE, as `--env` takes it, or a table's (name, value): the pair."""
    import re

    if isinstance(value, tuple):  # from a table: (name, value)
        name, text = value
        if not re.match(_NAME, name):
            raise Invalid(f"{name!r} is not a variable name")
        return name, text
    name, eq, text = str(value).partition("=")
    if not eq or not re.match(_NAME, name):
        raise Invalid(f"{value!r} is not NAME=VALUE (a variable name, then =)")
    return name, text


def model_rates(value: Any) -> tuple[str, str]:
    """MODEL=IN/CACHED/OUT, as `--price` takes it (USD per million tokens), or a table's
    (model, rates): the pair."""
    if isinstance(value, tuple):  # from a table: (model, rates)
        model, text, eq = str(value[0]), str(value[1]), "="
    else:
        model, eq, text = str(value).partition("=")
    if not eq or not model or any(c.isspace() for c in model):
        raise Invalid(f"{value!r} is not MODEL=IN/CACHED/OUT (e.g. my-model=2/0.1/10)")
    parts = str(text).split("/")
    try:
        rates = [float(p) for p in parts]
    except ValueError:
        rates = []
    if len(parts) not in (2, 3) or len(rates) != len(parts) or any(not r >= 0 for r in rates):
        raise Invalid(f"{model}: {text!r} is not IN/CACHED/OUT, USD per million tokens, each "
                      "a number of 0 or more (e.g. 2/0.1/10)")
    return model, str(text)


def variable_name(value: Any) -> str:
    """An environment variable's name, as `--env-exclude` takes it."""
    import re

    if not isinstance(value, str) or not re.match(_NAME, value):
        raise Invalid(f"{value!r} is not a variable name")
    return value


def duration(value: Any) -> float:
    """Seconds, as a number or with a unit: `90`, `90s`, `10m`, `1h`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    import re

    found = re.match(_DURATION, str(value))
    if found is None:
        raise Invalid(f"{value!r} is not a duration (seconds, or with a unit: 90s, 10m, 1h)")
    return float(found.group(1)) * _UNITS[found.group(2)]


_OURS = {"assignment": assignment, "model_rates": model_rates, "variable_name": variable_name,
         "duration": duration}
