"""Where settings are written: the project's files, the user's file and the environment.

Each source is read into layers of (key -> value, origin); a later layer wins. Within a file,
its `[plans."path/to/tasks.md"]` table wins over the file's own keys.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from agentloop.errors import SettingsError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.settings.keys import HOOK_PREFIX, KEYS, NOT_SETTINGS, PLANS, env_name, key_of

if TYPE_CHECKING:
    # The checks (with click's types) are imported where a file or a variable sets a key:
    # most runs have neither.
    from agentloop.settings.schema import Spec

PROJECT_FILE = "agent-loop.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = ("tool", "agent-loop")


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a flag, a variable, a file and line, or the default."""

    kind: str                  # flag | env | file | default
    name: str = ""             # the flag, the variable, or the file's path
    line: int | None = None    # the file's line of the key, when found

    def __str__(self) -> str:
        if self.kind == "file":
            return f"{self.name}:{self.line}" if self.line else self.name
        return f"{self.kind} {self.name}" if self.name else self.kind


Layer = dict[str, tuple[Any, Origin]]


def user_file(environ: Mapping[str, str]) -> Path | None:
    """$XDG_CONFIG_HOME/agent-loop/config.toml; ~/.config when unset (or not absolute); None
    without a home folder."""
    base = environ.get("XDG_CONFIG_HOME", "")
    try:
        folder = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    except RuntimeError:  # no HOME, and no home in the password database
        return None
    return folder / "agent-loop" / "config.toml"


def file_layers(path: Path, table: tuple[str, ...], plan: str | None,
                specs: Mapping[str, Spec], shown: str,
                root: Path | None = None) -> tuple[list[Layer], list[str]]:
    """A file's keys, then its table for `plan`; [] for a file that is not there. With them,
    a line for each plan's table that names no file below `root` (a project's file: the
    user's own names plans of any repository): a typo there would leave its budget unset."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{shown}: cannot read it: {exc}") from None
    data = _parse(text, shown)
    for part in table:
        data = data.get(part, {}) if isinstance(data, dict) else {}
    if not isinstance(data, dict):
        raise SettingsError(f"{shown}: [{'.'.join(table)}] must be a table of settings")
    if not data and table:
        return [], []  # a pyproject.toml without agent-loop's table
    lines = _Lines(text)
    top = _layer(data, table, specs, shown, lines, plans=True)
    plans = data.get(PLANS, {})
    if not isinstance(plans, dict) or not all(isinstance(v, dict) for v in plans.values()):
        at = lines.find(table, PLANS)
        raise SettingsError(f"{shown}{f':{at}' if at else ''}: {PLANS} holds one table per plan, "
                            'e.g. [plans."docs/tasks.md"]')
    layers, unknown = [top], []
    for written, values in plans.items():  # every plan's table is checked, this plan's used
        layer = _layer(values, (*table, PLANS, written), specs, shown, lines, plans=False)
        if _plan_key(written) == plan:
            layers.append(layer)
        elif root is not None and not (root / written).is_file():
            at = lines.find((*table, PLANS), written)
            unknown.append(f"{shown}{f':{at}' if at else ''}: [{PLANS}.\"{written}\"] names "
                           "no plan in this repository: its settings apply to none")
    return layers, unknown


def env_layer(environ: Mapping[str, str], specs: Mapping[str, Spec]) -> Layer:
    """AGENT_LOOP_<KEY> variables. Others with the prefix are not read: the agent programs'
    (AGENT_LOOP_CLAUDE, AGENT_LOOP_CODEX), a hook's (AGENT_LOOP_EVENT_*), and tools' own."""
    layer: Layer = {}
    for key in KEYS:
        name = env_name(key)
        if name in NOT_SETTINGS or name.startswith(HOOK_PREFIX) or name not in environ:
            continue
        if not environ[name] and specs[key].kind not in ("list", "table"):
            continue  # `AGENT_LOOP_MODEL= agent-loop …` unsets; only a list can be empty
        from agentloop.settings.schema import from_text

        value = from_text(specs[key], environ[name], f"environment {name}")
        layer[key] = (value, Origin("env", name))
    return layer


def _toml() -> Any:
    """The TOML parser, imported when a settings file is there to read: most plans have none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10 has no tomllib; tomli is the same parser, published on its own
        import tomli as tomllib
    return tomllib


def _parse(text: str, shown: str) -> dict[str, Any]:
    tomllib = _toml()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
    # tomllib says where in its message only (an attribute from Python 3.14 on)
    lines = text.split("\n")
    message = message.replace("(at end of document)",
                              f"(at line {len(lines)}, column {len(lines[-1]) + 1})")
    at = re.search(r"\s*\(at line (\d+), column (\d+)\)", message)
    if at is None:
        raise SettingsError(f"{shown}: not valid TOML: {message}")
    message = message[:at.start()] + message[at.end():]
    raise SettingsError(f"{shown}:{at[1]}:{at[2]}: not valid TOML: {message}")


def _layer(data: dict[str, Any], table: tuple[str, ...], specs: Mapping[str, Spec], shown: str,
           lines: "_Lines", plans: bool) -> Layer:
    layer: Layer = {}
    for written, value in data.items():
        if plans and written == PLANS:
            continue
        key = key_of(written)
        line = lines.find(table, written)
        where = f"{shown}:{line}" if line else shown
        if key not in specs:
            raise SettingsError(f"{where}: unknown setting {written!r}{_nearest(key)}")
        from agentloop.settings.schema import from_file

        layer[key] = (from_file(specs[key], value, where), Origin("file", shown, line))
    return layer


def _nearest(key: str) -> str:
    import difflib  # for a mistyped key only

    close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else " (agent-loop --show-settings lists them)"


def _plan_key(name: str) -> str:
    """A plan's path as its table names it, compared in one form: `./docs/tasks.md` is
    `docs/tasks.md`."""
    return Path(name).as_posix().removeprefix("./")


class _Lines:
    """Finds the line a key is written on by a plain scan of the text: tomllib reports none.
    A key written as a dotted key or inside an inline table is found without its line."""

    # Compiled by `re` when a settings file is first read (and kept in its cache): most runs
    # have none.
    _HEADER = r"\s*\[([^\[\]]+)\]\s*(#.*)?$"
    _KEY = r"\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)\s*="

    def __init__(self, text: str) -> None:
        self.where: dict[tuple[str, ...], int] = {}
        section: tuple[str, ...] = ()
        for number, line in enumerate(text.splitlines(), 1):
            header = re.match(self._HEADER, line)
            if header:
                section = _table_path(header[1])
                self.where.setdefault(section, number)  # a table's own line: its header
                continue
            key = re.match(self._KEY, line)
            if key:
                self.where.setdefault((*section, key[1].strip("\"'")), number)

    def find(self, table: tuple[str, ...], key: str) -> int | None:
        return self.where.get((*table, key))


def _table_path(header: str) -> tuple[str, ...]:
    """[plans."docs/tasks.md"] -> ("plans", "docs/tasks.md"), read by the TOML parser itself."""
    tomllib = _toml()
    try:
        data: Any = tomllib.loads(f"[{header}]")
    except tomllib.TOMLDecodeError:
        return ()
    path = []
    while isinstance(data, dict) and len(data) == 1:
        name, data = next(iter(data.items()))
        path.append(name)
    return tuple(path)
