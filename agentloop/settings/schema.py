"""A setting's value checked and converted by its option's own click type: a file's `budget = -1`
fails as `--budget -1` would, with the key, where it was written, and what is allowed."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, Callable

import click

from agentloop.errors import SettingsError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.settings.keys import KEYS, param

if TYPE_CHECKING:
    from agentloop.option_table import Type

# Compiled by `re` when first asked for: a run with no `env` setting never does.
_NAME = r"[A-Za-z_][A-Za-z0-9_]*\Z"


class Assignment(click.ParamType):
    """NAME=VALUE, as `--env` takes it: a pair (name, value)."""

    name = "NAME=VALUE"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):  # from a table: (name, value)
            name, text = value
            if not re.match(_NAME, name):
                self.fail(f"{name!r} is not a variable name", param, ctx)
            return name, text
        name, eq, text = str(value).partition("=")
        if not eq or not re.match(_NAME, name):
            self.fail(f"{value!r} is not NAME=VALUE (a variable name, then =)", param, ctx)
        return name, text


class ModelRates(Assignment):
    """MODEL=IN/CACHED/OUT, as `--price` takes it (USD per million tokens): a pair (model,
    rates); a table of them is the `prices` setting."""

    name = "MODEL=IN/CACHED/OUT"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):  # from a table: (model, rates)
            model, text, eq = str(value[0]), str(value[1]), "="
        else:
            model, eq, text = str(value).partition("=")
        if not eq or not model or any(c.isspace() for c in model):
            self.fail(f"{value!r} is not MODEL=IN/CACHED/OUT (e.g. my-model=2/0.1/10)", param, ctx)
        parts = str(text).split("/")
        try:
            rates = [float(p) for p in parts]
        except ValueError:
            rates = []
        if len(parts) not in (2, 3) or len(rates) != len(parts) or \
                any(not r >= 0 for r in rates):
            self.fail(f"{model}: {text!r} is not IN/CACHED/OUT, USD per million tokens, each "
                      "a number of 0 or more (e.g. 2/0.1/10)", param, ctx)
        return model, str(text)


class VariableName(click.ParamType):
    """An environment variable's name, as `--env-exclude` takes it."""

    name = "NAME"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        if not isinstance(value, str) or not re.match(_NAME, value):
            self.fail(f"{value!r} is not a variable name", param, ctx)
        return value


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
# Compiled by `re` when a duration is first given (and kept in its cache), not at every start.
_DURATION = r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*\Z"


class Duration(click.ParamType):
    """Seconds, as a number or with a unit: `90`, `90s`, `10m`, `1h`."""

    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
        found = re.match(_DURATION, str(value))
        if found is None:
            self.fail(f"{value!r} is not a duration (seconds, or with a unit: 90s, 10m, 1h)",
                      param, ctx)
        return float(found.group(1)) * _UNITS[found.group(2)]


class AgentChoice(click.Choice):
    """The agents a user picks; the offline stand-in is a mode (--rehearse), not one of them.
    Their table (agentloop.agents) is read when a value given must be checked, or --help lists
    them: the default needs no check, so --status never imports the agents' package."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        from agentloop.agents import AGENTS

        return tuple(sorted(a for a in AGENTS if a != "rehearse"))

    @choices.setter
    def choices(self, value: Any) -> None:
        pass  # click.Choice sets them; ours come from the table

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "rehearse":
            self.fail("a rehearsal is a mode, not an agent: use --rehearse", param, ctx)
        if param is not None and value == param.default:
            return value
        return super().convert(value, param, ctx)


@dataclass(frozen=True)
class Spec:
    """One key: how its values are written (flag, list, table or one value) and checked."""

    key: str
    kind: str                 # flag | list | table | value
    type: click.ParamType

    @property
    def expected(self) -> str:
        """What a value of this key looks like, for an error."""
        if self.kind == "flag":
            return "true or false"
        if self.kind == "table":
            return ('a table of model rates, e.g. prices = { "my-model" = "2/0.1/10" }'
                    if isinstance(self.type, ModelRates) else
                    'a table of variables, e.g. env = { NAME = "value" }')
        if self.kind == "list":
            return 'a list of strings, e.g. ["pytest -q"]'
        if isinstance(self.type, Duration):
            return 'seconds, or a duration such as "10m"'
        if isinstance(self.type, click.Choice):
            return "one of " + ", ".join(repr(c) for c in self.type.choices)
        if isinstance(self.type, click.IntRange):
            return f"a whole number, {self.type._describe_range()}"  # click's own wording
        if isinstance(self.type, click.FloatRange):
            return f"a number, {self.type._describe_range()}"
        if isinstance(self.type, click.types.IntParamType):
            return "a whole number"
        if isinstance(self.type, click.types.FloatParamType):
            return "a number"
        return "a string"


def specs() -> dict[str, Spec]:
    """Every key's spec, from its option's entry (agentloop.option_table); a key without its
    option is a bug."""
    from agentloop.option_table import BY_NAME

    out = {}
    for key in KEYS:
        option = BY_NAME[param(key)]
        type_ = click_type(option.type) if option.type is not None else \
            click.BOOL if option.is_flag else click.STRING
        out[key] = Spec(key, option.kind, type_)
    return out


def click_type(type_: Type) -> click.ParamType:
    """The click type of an option's type (agentloop.option_table.Type)."""
    kinds: dict[str, Callable[[], click.ParamType]] = {
        "choice": lambda: click.Choice(list(type_.choices)),
        "int": lambda: click.IntRange(_whole(type_.low), _whole(type_.high)),
        "float": lambda: click.FloatRange(type_.low, type_.high),
        "agent": AgentChoice, "assignment": Assignment, "model_rates": ModelRates,
        "variable_name": VariableName, "duration": Duration}
    return kinds[type_.kind]()


def _whole(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


def from_file(spec: Spec, value: Any, where: str) -> Any:
    """A value as TOML gave it, checked and converted; SettingsError names `where`."""
    if spec.kind == "flag":
        if not isinstance(value, bool):
            _bad(spec, value, where)
        return value
    if spec.kind == "table":
        if not isinstance(value, dict) or not all(_scalar(v) for v in value.values()):
            _bad(spec, value, where)
        return tuple(_convert(spec, (str(k), _text(v)), where) for k, v in value.items())
    if spec.kind == "list":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            _bad(spec, value, where)
        return tuple(_convert(spec, i, where) for i in items)
    if isinstance(spec.type, Duration) and isinstance(value, (int, float, str)) \
            and not isinstance(value, bool):
        return _convert(spec, value, where)  # 600, or "10m"
    numeric = isinstance(spec.type, (click.types.IntParamType, click.types.FloatParamType))
    wrong = (isinstance(value, bool) or (numeric and not isinstance(value, (int, float))) or
             (not numeric and not isinstance(value, str)))
    if wrong or (isinstance(spec.type, click.types.IntParamType) and isinstance(value, float)):
        _bad(spec, value, where)
    return _convert(spec, value, where)


def from_text(spec: Spec, text: str, where: str) -> Any:
    """A value as an environment variable gives it: a list is one shell-like line."""
    if spec.kind == "flag":
        return _convert(spec, text, where, click.BOOL)
    if spec.kind in ("list", "table"):
        try:
            items = shlex.split(text)
        except ValueError as exc:
            raise SettingsError(f"{where}: {exc} (a list is written as one shell-like line, "
                                "e.g. \"pytest -q\" \"ruff check .\")") from None
        return tuple(_convert(spec, i, where) for i in items)
    return _convert(spec, text, where)


def _convert(spec: Spec, value: Any, where: str, type_: click.ParamType | None = None) -> Any:
    try:
        return (type_ or spec.type).convert(value, None, None)
    except click.BadParameter as exc:
        raise SettingsError(f"{where}: {exc.message.rstrip('.')}; "
                            f"{spec.key} takes {spec.expected}") from None


def _bad(spec: Spec, value: Any, where: str) -> None:
    raise SettingsError(f"{where}: {spec.key} = {show(value)}: {spec.key} takes {spec.expected}")


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def show(value: Any) -> str:
    """A value as TOML writes it, for --show-settings and errors."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {show(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, tuple) and len(v) == 2 for v in value) and value:
            return show({k: v for k, v in value})
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)
