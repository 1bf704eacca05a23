"""The reference pages that are read off the code, never copied from it: every option (from the
click definitions in agentloop/cli.py and --help's sections), every settings key (from
agentloop/settings), the exit codes (from agentloop/errors.py) and the events' JSON schema (from
the dataclasses in agentloop/run/events.py).

Each function returns MyST markdown; the Sphinx directive `agentloop-reference` puts it into a
page at build time, so a page cannot drift from the code. tests/project/test_docs.py checks the
built pages against the code, and the example run's events against the schema."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from typing import Any, Iterator

import click

from agentloop.ondemand import made

# --- options --------------------------------------------------------------------------------


def _command() -> click.Command:
    from agentloop.cli import command

    return command


def _cell(text: str) -> str:
    """Text fit for one cell of a markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def _flags(option: click.Option) -> str:
    """How the option is written, fit for a table cell: every spelling, its metavar, its `--no-`
    form."""
    names = sorted(option.opts, key=lambda o: (-len(o), o))
    shown = ", ".join(f"`{n}`" for n in names)
    if not option.is_flag and not option.count:
        metavar = option.metavar or option.type.name.upper()
        if isinstance(option.type, click.Choice):
            metavar = "|".join(str(c) for c in option.type.choices)
        shown = ", ".join(f"`{n} {metavar}`" for n in names)
    if option.secondary_opts:
        shown += " (" + ", ".join(f"`{n}`" for n in option.secondary_opts) + ")"
    return shown.replace("|", "\\|")


_DEFAULT = re.compile(r"\s*\[default: ([^\]]*)\]\.?")


def _help_and_default(option: click.Option) -> tuple[str, str]:
    """The option's help without its `[default: …]`, and that default in words."""
    text = option.help or ""
    found = _DEFAULT.search(text)
    if found:
        return _DEFAULT.sub("", text).strip(), found.group(1)
    if option.is_flag:
        if option.secondary_opts:
            return text, "on" if option.default else "off"
        return text, ""
    if option.multiple:
        return text, "none"
    default = option.default
    if default is None:
        return text, "none"
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return text, f"`{default}`"


def _option_params() -> dict[str, click.Option]:
    command = _command()
    ctx = command.make_context("agent-loop", ["tasks.md"])
    helps = command.get_help_option(ctx)
    return {"help" if p is helps else str(p.name): p for p in command.get_params(ctx)
            if isinstance(p, click.Option)}


def options() -> str:
    """Every option by --help's sections: how it is written, what it does, its default and the
    settings key that sets it too."""
    from agentloop.console.help import EXAMPLES, SECTIONS, UNSORTED
    from agentloop.settings.keys import KEYS, env_name, param

    params = _option_params()
    keys = {param(k): k for k in KEYS}
    listed = {name for _, names in SECTIONS for name in names}
    sections = [*SECTIONS, (UNSORTED, [n for n in params if n not in listed])]
    out = []
    for title, names in sections:
        rows = [n for n in names if n in params]
        if not rows:
            continue
        out += [f"## {title}", "", "| option | what it does | default | setting |",
                "| --- | --- | --- | --- |"]
        for name in rows:
            option = params[name]
            text, default = _help_and_default(option)
            key = keys.get(name)
            setting = f"`{key}`, `{env_name(key)}`" if key else ""
            out.append(f"| {_flags(option)} | {_cell(text)} | {_cell(default)} | {setting} |")
        out.append("")
    out += ["## Examples", ""]
    for line, what in EXAMPLES:
        out += [f"{what}:", "", "```sh", line, "```", ""]
    return "\n".join(out)


# --- settings -------------------------------------------------------------------------------


def settings() -> str:
    """Every settings key: its option, the values it takes, its default and its variable."""
    from agentloop.settings.keys import KEYS, env_name, param
    from agentloop.settings.schema import specs

    params = _option_params()
    spec = specs()
    out = ["| key | option | takes | default | variable |", "| --- | --- | --- | --- | --- |"]
    for key in KEYS:
        option = params[param(key)]
        _, default = _help_and_default(option)
        flags = ", ".join(f"`{n}`" for n in [max(option.opts, key=len), *option.secondary_opts])
        if option.multiple:
            flags += " (repeatable)"
        out.append(f"| `{key}` | {flags} | {_cell(spec[key].expected)} | {_cell(default)} | "
                   f"`{env_name(key)}` |")
    return "\n".join(out) + "\n"


# --- exit codes -----------------------------------------------------------------------------


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _every_module() -> None:
    """Import every module of agentloop: an error class defined beside the code that raises it
    (vcs.mainline's IntegrationConflict) exists only once its module is imported, and the CLI
    imports the run's modules only when a run needs them."""
    import importlib
    import pkgutil

    import agentloop

    for info in pkgutil.walk_packages(agentloop.__path__, "agentloop."):
        if info.name != "agentloop.__main__":
            importlib.import_module(info.name)


def exit_codes() -> str:
    """Each exit code and what it means, then each error a user can meet and its code."""
    from agentloop import errors

    _every_module()

    out = ["| code | meaning |", "| --- | --- |"]
    out += [f"| {code} | {_cell(meaning)} |" for code, meaning in errors.EXIT_CODES.items()]
    out += ["", "## The errors behind them", "",
            "Each error agent-loop reports is one of these (`agentloop/errors.py`); the message "
            "says what happened and what to do.", "",
            "| error | exit code | what it means |", "| --- | --- | --- |"]
    for cls in [errors.AgentLoopError, *_subclasses(errors.AgentLoopError)]:
        out.append(f"| `{cls.__name__}` | {getattr(cls, 'exit_code')} | "
                   f"{_cell(inspect.getdoc(cls) or '')} |")
    return "\n".join(out) + "\n"


# --- events ---------------------------------------------------------------------------------

_FIELD = re.compile(r"^\s+(\w+): [^#]*?(?:#\s*(.*))?$")


def _field_notes(cls: type) -> dict[str, str]:
    """The comment written beside each field in the class's source."""
    notes = {}
    for line in inspect.getsource(cls).splitlines():
        found = _FIELD.match(line)
        if found and found.group(2):
            notes[found.group(1)] = found.group(2).strip()
    return notes


def _hints(cls: type) -> dict[str, Any]:
    """The fields' types; a field whose type cannot be resolved keeps its annotation's text."""
    module = inspect.getmodule(cls)
    try:
        return typing.get_type_hints(cls, vars(module) if module else None)
    except (NameError, TypeError):  # a name imported only for type checking
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _schema_of(hint: Any) -> dict[str, Any]:
    """A JSON Schema for a field's type, as orjson writes a value of it; {} (anything) for a
    type it cannot tell, so a new kind of field never stops the build."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return {"type": "null"}
    if origin is typing.Union or isinstance(hint, types.UnionType):
        return {"anyOf": [_schema_of(a) for a in args]}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema_of(args[0])}
        return {"type": "array", "prefixItems": [_schema_of(a) for a in args],
                "minItems": len(args), "maxItems": len(args)}
    if origin in (list, set, frozenset, collections.abc.Sequence):
        return {"type": "array", "items": _schema_of(args[0]) if args else {}}
    if origin in (dict, collections.abc.Mapping):
        return {"type": "object",
                "additionalProperties": _schema_of(args[1]) if len(args) == 2 else {}}
    if isinstance(hint, type) and dataclasses.is_dataclass(made(hint)):
        return _object(hint)
    return {}


def _object(cls: Any, envelope: dict[str, Any] | None = None) -> dict[str, Any]:
    cls = made(cls)
    hints = _hints(cls)
    props = dict(envelope or {})
    required = list(props)
    for f in dataclasses.fields(cls):
        props[f.name] = _schema_of(hints[f.name])
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    return {"type": "object", "properties": props, "required": required}


def event_schema() -> dict[str, Any]:
    """The JSON Schema of one line of events.jsonl: one object per event type."""
    from agentloop.run import events

    kinds = []
    for name, cls in events.event_types().items():
        envelope = {"v": {"const": events.SCHEMA_VERSION}, "type": {"const": name},
                    "time": {"type": "string", "format": "date-time"}}
        schema = _object(cls, envelope)
        schema["properties"].setdefault("lane", {"type": "string"})
        schema["title"] = name
        kinds.append(schema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "a line of .agent-loop/events.jsonl", "oneOf": kinds}


def _type_name(hint: Any) -> str:
    text = str(hint) if not isinstance(hint, type) else hint.__name__
    return text.replace("typing.", "").replace("agentloop.agents.", "")


def events() -> str:
    """Every event type: what it says, its fields with their types and notes, then the schema."""
    from agentloop.agents import AgentResult, Totals
    from agentloop.run import events as ev

    out = []
    # A record made on first use (agentloop.ondemand) is a dataclass once made.
    for name, cls in [*ev.event_types().items(), ("AgentResult", made(AgentResult)),
                      ("Totals", made(Totals))]:
        nested = name in ("AgentResult", "Totals")
        out += [f"### `{name}`", "", _cell(inspect.getdoc(cls) or ""), ""]
        if nested:
            where = "AgentFinished.result" if name == "AgentResult" else "AgentResult.totals"
            out += [f"(the object in `{where}`)", ""]
        out += ["| field | type | default | note |", "| --- | --- | --- | --- |"]
        hints, notes = _hints(cls), _field_notes(cls)
        for f in dataclasses.fields(cls):
            default = ("" if f.default is dataclasses.MISSING and
                       f.default_factory is dataclasses.MISSING else
                       f"`{json.dumps(f.default)}`" if f.default is not dataclasses.MISSING and
                       isinstance(f.default, (str, int, float, bool, type(None), tuple))
                       else "empty")
            out.append(f"| `{f.name}` | `{_cell(_type_name(hints[f.name]))}` | {default} | "
                       f"{_cell(notes.get(f.name, ''))} |")
        out.append("")
    out += ["## The JSON Schema", "",
            f"Every line validates against this schema (schema version {ev.SCHEMA_VERSION}):", "",
            "```json", json.dumps(event_schema(), indent=2), "```", ""]
    return "\n".join(out)


PAGES = {"options": options, "settings": settings, "exit-codes": exit_codes, "events": events}

# The modules each page is read from: a page is written again when one of them changes, so an
# incremental build (scripts/docs.sh run twice) never shows a page older than the code.
SOURCES = {
    "options": ("agentloop.cli", "agentloop.options.table", "agentloop.console.help",
                "agentloop.settings.keys"),
    "settings": ("agentloop.cli", "agentloop.options.table", "agentloop.settings.keys",
                 "agentloop.settings.schema", "agentloop.settings.click_types"),
    "exit-codes": ("agentloop.errors",),
    "events": ("agentloop.run.events", "agentloop.run.lane_tag", "agentloop.agents"),
}


# --- the Sphinx directive -------------------------------------------------------------------


def setup(app: Any) -> dict[str, Any]:
    """Register ```{agentloop-reference} NAME```, which puts PAGES[NAME]'s markdown in place."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class Reference(SphinxDirective):
        required_arguments = 1

        def run(self) -> list[nodes.Node]:
            name = self.arguments[0]
            if name not in PAGES:
                raise self.error(f"unknown reference {name!r}; one of {sorted(PAGES)}")
            import importlib

            text = PAGES[name]()
            self.env.note_dependency(__file__)
            for module in SOURCES[name]:
                self.env.note_dependency(str(inspect.getsourcefile(
                    importlib.import_module(module))))
            # A section to parse into, so the generated headings become sections of the page
            # (with anchors and a place in its table of contents), not plain rubrics.
            box = nodes.section()
            box.document = self.state.document
            self.state.nested_parse(StringList(text.splitlines(), source="(generated)"),
                                    self.content_offset, box, match_titles=True)
            return box.children

    app.add_directive("agentloop-reference", Reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
