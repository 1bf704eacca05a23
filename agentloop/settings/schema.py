"""A setting's value checked and converted as its option's own click type does: a file's
`budget = -1` fails as `--budget -1` would, with the key, where it was written, and what is
allowed. A value agentloop.options.values vouches for is converted without click (the settings of
most runs: click is some ten milliseconds of a start); any other, and every error, is click's
type's own (agentloop.settings.click_types)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloop.errors import SettingsError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.options.values import NotSure, converted
from agentloop.settings.keys import KEYS, param

if TYPE_CHECKING:
    from agentloop.options.table import Type


@dataclass(frozen=True)
class Spec:
    """One key: how its values are written (flag, list, table or one value) and checked."""

    key: str
    kind: str                 # flag | list | table | value
    type: Type | None         # its option's (agentloop.options.table); None: a flag's, a string's

    @property
    def expected(self) -> str:
        """What a value of this key looks like, for an error."""
        if self.kind == "flag":
            return "true or false"
        if self.kind == "table":
            return ('a table of model rates, e.g. prices = { "my-model" = "2/0.1/10" }'
                    if self._is("model_rates") else
                    'a table of variables, e.g. env = { NAME = "value" }')
        if self.kind == "list":
            return 'a list of strings, e.g. ["pytest -q"]'
        from agentloop.settings.click_types import expected

        return expected(self.type)

    def _is(self, kind: str) -> bool:
        return self.type is not None and self.type.kind == kind


def specs() -> dict[str, Spec]:
    """Every key's spec, from its option's entry (agentloop.options.table); a key without its
    option is a bug."""
    from agentloop.options.table import BY_NAME

    out = {}
    for key in KEYS:
        option = BY_NAME[param(key)]
        out[key] = Spec(key, option.kind, option.type)
    return out


def from_file(spec: Spec, value: Any, where: str) -> Any:
    """A value as TOML gave it, checked and converted; SettingsError names `where`."""
    if _nul(value):  # TOML can write one (\u0000); no argv, variable or command holds it
        raise SettingsError(f"{where}: {spec.key} holds a NUL character (\\u0000), which no "
                            "command line, argument or environment variable can hold")
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
    if (spec._is("duration") or spec._is("float")) and isinstance(value, int) and \
            not isinstance(value, bool) and not _fits_float(value):
        _bad(spec, value, where)  # TOML's whole numbers have no bound; float() has one
    if spec._is("duration") and isinstance(value, (int, float, str)) \
            and not isinstance(value, bool):
        return _convert(spec, value, where)  # 600, or "10m"
    numeric = spec._is("int") or spec._is("float")
    wrong = (isinstance(value, bool) or (numeric and not isinstance(value, (int, float))) or
             (not numeric and not isinstance(value, str)))
    if wrong or (spec._is("int") and isinstance(value, float)):
        _bad(spec, value, where)
    return _convert(spec, value, where)


def from_text(spec: Spec, text: str, where: str) -> Any:
    """A value as an environment variable gives it: a list is one shell-like line."""
    if spec.kind == "flag":
        return _convert(spec, text, where)
    if spec.kind in ("list", "table"):
        import shlex  # a list in a variable only

        try:
            items = shlex.split(text)
        except ValueError as exc:
            raise SettingsError(f"{where}: {exc} (a list is written as one shell-like line, "
                                "e.g. \"pytest -q\" \"ruff check .\")") from None
        return tuple(_convert(spec, i, where) for i in items)
    return _convert(spec, text, where)


def _convert(spec: Spec, value: Any, where: str) -> Any:
    """`value` as the key's click type converts it: without click when agentloop.options.values
    is sure of how, else by click's type itself, whose refusal is the error."""
    flag = spec.kind == "flag"
    try:
        return converted(spec.type, value, flag)
    except NotSure:
        pass
    from agentloop.settings.click_types import by_click

    try:
        return by_click(spec.type, value, flag)
    except ValueError as exc:
        raise SettingsError(f"{where}: {str(exc).rstrip('.')}; "
                            f"{spec.key} takes {spec.expected}") from None


def _bad(spec: Spec, value: Any, where: str) -> None:
    raise SettingsError(f"{where}: {spec.key} = {show(value)}: {spec.key} takes {spec.expected}")


def _nul(value: Any) -> bool:
    """Whether a NUL is in a string of `value` (a table's names and values, a list's items)."""
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, dict):
        return any(_nul(k) or _nul(v) for k, v in value.items())
    return isinstance(value, list) and any(_nul(v) for v in value)


def _fits_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


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
