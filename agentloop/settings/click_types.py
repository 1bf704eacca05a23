"""The options' click types, as click's command (agentloop.cli) takes them, and the settings'
checks when a value is one that agentloop.options.values leaves to click. Our own types' rules
are agentloop.options.values's; here they fail as click's types do, with its message."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import click

if TYPE_CHECKING:
    from agentloop.options.table import Type


class _Ours(click.ParamType):
    """One of our own types: its rule is agentloop.options.values's (imported when a value
    comes, not for --help), its error click's."""

    rule: str  # the rule's name in agentloop.options.values

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        from agentloop.options import values

        try:
            return getattr(values, self.rule)(value)
        except values.Invalid as exc:
            self.fail(exc.message, param, ctx)


class Number(click.FloatRange):
    """click's FloatRange, which lets `nan` through its range (every comparison with it is
    false) and `inf` through one with no upper bound: a budget of nan or inf was no budget at
    all (shown as `$inf`), a timeout of inf none either."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number != number:  # nan, however it was written
            self.fail(f"{value!r} is not a number.", param, ctx)
        if number in (math.inf, -math.inf):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class Assignment(_Ours):
    """NAME=VALUE, as `--env` takes it: a pair (name, value)."""

    name = "NAME=VALUE"
    rule = "assignment"


class ModelRates(_Ours):
    """MODEL=IN/CACHED/OUT, as `--price` takes it (USD per million tokens): a pair (model,
    rates); a table of them is the `prices` setting."""

    name = "MODEL=IN/CACHED/OUT"
    rule = "model_rates"


class VariableName(_Ours):
    """An environment variable's name, as `--env-exclude` takes it."""

    name = "NAME"
    rule = "variable_name"


class Duration(_Ours):
    """Seconds, as a number or with a unit: `90`, `90s`, `10m`, `1h`."""

    name = "DURATION"
    rule = "duration"


class AgentChoice(click.Choice):
    """The agents a user picks; the offline stand-in is a mode (--rehearse), not one of them.
    Their table (agentloop.agents) is read when a value given must be checked, or --help lists
    them: the default needs no check, so --status never imports the agents' package."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        return agent_choices()

    @choices.setter
    def choices(self, value: Any) -> None:
        pass  # click.Choice sets them; ours come from the table

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "rehearse":
            self.fail("a rehearsal is a mode, not an agent: use --rehearse", param, ctx)
        if param is not None and value == param.default:
            return value
        return super().convert(value, param, ctx)


def agent_choices() -> tuple[str, ...]:
    """The agents a user may name, in the order --help and an error list them."""
    from agentloop.agents import AGENTS

    return tuple(sorted(a for a in AGENTS if a != "rehearse"))


def click_type(type_: Type | None, flag: bool = False) -> click.ParamType:
    """The click type of an option's type (agentloop.options.table.Type); None is a string's,
    or with `flag` a flag's."""
    if type_ is None:
        return click.BOOL if flag else click.STRING
    kinds: dict[str, Callable[[], click.ParamType]] = {
        "choice": lambda: click.Choice(list(type_.choices)),
        "int": lambda: click.IntRange(_whole(type_.low), _whole(type_.high)),
        "float": lambda: Number(type_.low, type_.high, min_open=type_.low_open),
        "agent": AgentChoice, "assignment": Assignment, "model_rates": ModelRates,
        "variable_name": VariableName, "duration": Duration}
    return kinds[type_.kind]()


def _whole(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


def by_click(type_: Type | None, value: Any, flag: bool = False) -> Any:
    """`value` converted by its click type; ValueError with click's message if it refuses."""
    try:
        return click_type(type_, flag).convert(value, None, None)
    except click.BadParameter as exc:
        raise ValueError(exc.message) from None


def expected(type_: Type | None) -> str:
    """What one value of a type looks like, for a settings error (click's own wording of a
    range)."""
    made = click_type(type_)
    if isinstance(made, Duration):
        return 'seconds, or a duration such as "10m"'
    if isinstance(made, click.Choice):
        return "one of " + ", ".join(repr(c) for c in made.choices)
    if isinstance(made, click.IntRange):
        return f"a whole number, {made._describe_range()}"  # click's own wording
    if isinstance(made, click.FloatRange):
        return f"a number, {made._describe_range()}"
    if isinstance(made, click.types.IntParamType):
        return "a whole number"
    if isinstance(made, click.types.FloatParamType):
        return "a number"
    return "a string"
