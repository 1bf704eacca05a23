"""The merge: every key's value from the first source that sets it, and where that was."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from agentloop.ondemand import dataclass_now as dataclass
from agentloop.options.table import BY_NAME
from agentloop.settings.keys import KEYS, param
from agentloop.settings.sources import (
    PROJECT_FILE,
    PYPROJECT,
    PYPROJECT_TABLE,
    Layer,
    Origin,
    env_layer,
    file_layers,
    user_file,
)
from agentloop.vcs import find_root, relative_to

if TYPE_CHECKING:
    from agentloop.settings.schema import Spec


@dataclass(frozen=True)
class Row:
    """One effective setting: its key, value and where that came from."""

    key: str
    value: Any
    origin: Origin
    kind: str = "value"     # flag | list | table | value (schema.Spec)


@dataclass(frozen=True)
class Settings:
    """Every key's effective value, by option parameter name, and the rows that show why."""

    values: dict[str, Any]
    rows: tuple[Row, ...]
    files: tuple[str, ...]      # the settings files read, lowest precedence first
    plan: str                   # the plan's name in [plans."…"] tables
    notes: tuple[str, ...] = ()  # lines to say before the command works (a table for no plan)


def resolve(values: Mapping[str, Any], given: set[str], task_file: Path | None, cwd: Path,
            environ: Mapping[str, str] | None = None) -> Settings:
    """Merge the sources; `values` are the options' values as click converts them (defaults
    included), `given` the names of those set on the command line. Without a `task_file`
    (--serve of every plan) no plan's table applies."""
    environ = os.environ if environ is None else environ
    spec = _Specs()
    path = None if task_file is None else task_file if task_file.is_absolute() \
        else cwd / task_file
    # the root agentloop.state.plain.locate finds
    root = find_root(cwd) or (find_root(path.resolve().parent) or path.resolve().parent
                              if path is not None else cwd)
    plan = "" if path is None else relative_to(path, root) or str(path)
    # click's values of options not given are their defaults, converted (() for a list)
    layers: list[Layer] = [{k: (values[param(k)], Origin("default")) for k in KEYS}]
    files, notes = [], []
    for file, table, own in ((user_file(environ), (), False),
                             (root / PYPROJECT, PYPROJECT_TABLE, True),
                             (root / PROJECT_FILE, (), True)):
        if file is None:
            continue
        read, unknown = file_layers(file, table, plan or None, spec, _shown(file, cwd),
                                    root if own else None)
        if read:
            files.append(_shown(file, cwd))
        layers += read
        notes += unknown
    layers.append(env_layer(environ, spec))
    layers.append({k: (values[param(k)], Origin("flag", _flag(k, values[param(k)])))
                   for k in KEYS if param(k) in given})
    merged: dict[str, tuple[Any, Origin]] = {}
    for layer in layers:
        merged.update(layer)
    rows = tuple(Row(k, *merged[k], BY_NAME[param(k)].kind) for k in KEYS)
    return Settings({param(r.key): r.value for r in rows}, rows, tuple(files), plan,
                    tuple(notes))


class _Specs(Mapping[str, "Spec"]):
    """Every key's spec, made when a settings file or variable first needs one: they check
    values with the options' click types, and most runs have neither (a plain run imports no
    click: agentloop.console.plain)."""

    def __init__(self) -> None:
        self._made: dict[str, Spec] | None = None

    def _all(self) -> dict[str, Spec]:
        if self._made is None:
            from agentloop.settings.schema import specs

            self._made = specs()
        return self._made

    def __getitem__(self, key: str) -> Spec:
        return self._all()[key]

    def __contains__(self, key: object) -> bool:
        return key in KEYS

    def __iter__(self) -> Iterator[str]:
        return iter(KEYS)

    def __len__(self) -> int:
        return len(KEYS)


def _flag(key: str, value: Any) -> str:
    """The flag as given: --review, or --no-review for a flag's False."""
    return f"--no-{key}" if value is False else f"--{key}"


def _shown(path: Path, cwd: Path) -> str:
    """A file as the user can open it from where they stand."""
    try:
        shown = os.path.relpath(path, cwd)
    except ValueError:
        return str(path)
    return str(path) if shown.startswith("..") else shown
