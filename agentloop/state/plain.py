"""state.json read into plain records for `--status`: the JSON objects themselves, checked by
the same table the full reader checks by (agentloop.state.fields), with no record classes and
none of the modules they need (dataclasses, typing, orjson), which cost more than the rest of
`--status` together. Where a plan's state lives is found here too, for both readers.

The plain reader takes only what it can read with no doubt: a snapshot of this schema version,
made from the very plan file (its hash) by this plan reader, every record whole (each field, in
the writer's order, of its type), and every line of its journal (a running plan's) whole and
its own. Anything else is read by the full reader (agentloop.state.schema, with
agentloop.state.journal), which says what it says about it; so a damaged, old or edited plan's
`--status` is the same either way.
"""

from __future__ import annotations

import json
import re
from math import isinf
from pathlib import Path
from stat import S_ISDIR

from agentloop.errors import StateError
from agentloop.files import listing, regular
from agentloop.files.digest import hexdigest
from agentloop.plan import source
from agentloop.state.fields import ATTEMPTS, SCHEMA_VERSION, STATES, TASKS, Table, check, fits
from agentloop.state.status import WORDS
from agentloop.vcs import STATE_DIR, find_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from agentloop.state.schema import State


class Record:
    """A record read plainly: its JSON object is its attributes (`task.status`), as the full
    reader's classes have them, so what reads records reads either."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__ = fields


def locate(task_file: Path, cwd: Path) -> tuple[Path, Path]:
    """The task file's full path, and the root: the repository around `cwd`, else the one
    around the task file, else its folder. TaskFileError when the plan lies in another
    repository: its tasks would land in this one, which is seldom what was meant (a path typed
    from the wrong folder). A submodule or a repository nested under the root is another
    repository too (its tasks' files would be committed at the root's, not in it)."""
    path = (cwd / task_file).resolve() if not task_file.is_absolute() else task_file.resolve()
    root = find_root(cwd.resolve())
    if root is None:
        # From outside any repository a plan in a subfolder of one is still that repository's
        # (its state, its settings), as from inside: its folder would be a root of its own.
        return path, find_root(path.parent) or path.parent
    # Paths first: a plan in the root's own folder (the common case) looks for no folder; one
    # in a subfolder stats each folder up to the root (no process).
    if path.parent != root:
        other = find_root(path.parent)
        # A repository around this one (a home folder kept in git, a monorepo's outer one)
        # holds plans kept outside the project: they run here, as ever.
        if other is not None and other != root and not root.is_relative_to(other):
            _elsewhere(path, other)
    return path, root


def _elsewhere(path: Path, other: Path) -> None:
    """Refuse the plan at `path`, which lies in the repository at `other`."""
    from agentloop.errors import TaskFileError
    from agentloop.files.shown import typed, typed_path

    name = path.relative_to(other).as_posix()
    raise TaskFileError(f"{path.name} is in another repository ({other}); run agent-loop there "
                        f"(cd {typed(other)} && agent-loop {typed_path(name)}), or "
                        "copy the plan into this one")


def relative(path: Path, root: Path) -> str:
    """A path as shown to the user and kept in the state: relative to the project root."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def plan_folder(root: Path, task_file: Path, parse: Callable[[bytes, Path], Any],
                ) -> tuple[Path, tuple[bytes, Any] | None]:
    """Where this plan's state, logs and learnings live: the first plan of a repository keeps
    `.agent-loop/` itself, every other one `.agent-loop/plans/<name>-<hash>/`; and
    `.agent-loop/state.json` as read to tell (its bytes and their JSON by `parse`, which raises
    StateError), so that a state of thousands of records is parsed once, not twice."""
    name, base, own = plan_name(root, task_file), root / STATE_DIR, own_folder(root, task_file)
    if (own / "state.json").exists():
        return own, None
    try:
        raw = regular.read_bytes(base / "state.json")
        data = parse(raw, base / "state.json")
    except (OSError, StateError):
        return base, None   # free; or damaged, which the store says when it loads it
    if not isinstance(data, dict) or data.get("task_file") in (None, name):
        return base, (raw, data)   # already this plan's
    return own, None


def plan_name(root: Path, task_file: Path) -> str:
    """The plan's name as its state records it: its path from the root, else its full path."""
    try:
        return task_file.relative_to(root).as_posix()
    except ValueError:
        return str(task_file)


def own_folder(root: Path, task_file: Path) -> Path:
    """`.agent-loop/plans/<name>-<hash>/`: the folder of a plan that is not the first."""
    name = plan_name(root, task_file)
    digest = hexdigest(name.encode("utf-8", "surrogateescape"))[:8]
    return root / STATE_DIR / "plans" / f"{source.slug(name, 40) or 'plan'}-{digest}"


def plan_folders(root: Path) -> list[Path]:
    """The folder of every plan that has run in the repository at `root`: the first plan's
    `.agent-loop/`, then the others' `.agent-loop/plans/<name>-<hash>/`."""
    base = root / STATE_DIR
    folders = [base, *sorted(listing.folders(base / "plans"))]
    return [f for f in folders if _kept(f / "state.json")]


def _kept(state: Path) -> bool:
    """Whether `state` is there as anything but a folder: a named pipe or a device in its place
    is a plan's state that cannot be read, said so as a damaged one is, not passed over."""
    try:
        return not S_ISDIR(state.stat().st_mode)
    except OSError:
        return False


def loads(raw: bytes, where: Path) -> Any:
    """The JSON of a state file's bytes (the standard library's reader); StateError when they
    are not JSON, or hold what orjson, the full reader's, reads otherwise (_parse)."""
    try:
        return _parse(raw)
    except ValueError:
        raise StateError(f"{where} is not valid JSON") from None


# The state's fields a journal line may carry besides its task: those a run changes as it goes.
JOURNAL_TOP = tuple(name for name in STATES.order if name not in ("tasks", "journal_id"))


def _parse(raw: bytes) -> Any:
    """`raw`'s JSON; ValueError for what orjson refuses or reads otherwise: bytes that are not
    UTF-8 (the standard library's reader takes UTF-16, a byte order mark, a surrogate), a lone
    surrogate escape, NaN or Infinity, a number beyond a double, an integer beyond 64 bits
    (orjson's is a float). None is in a file either writer writes: hand-made, all of them."""
    # A backslash is rare in a state (a message's line break): the search runs only then.
    if b"\\" in raw and re.search(_LONE_SURROGATE, raw):
        raise ValueError("a lone surrogate")
    return json.loads(raw.decode(), parse_constant=_refused, parse_int=_int64,
                      parse_float=_double)


# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or that one not after it.
# Compiled by `re` when a state first holds an escape (and kept in its cache), not at import:
# most states hold none, and a run never reads one this way.
_LONE_SURROGATE = (rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|"
                   rb"(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F]")


def _refused(word: str) -> Any:
    raise ValueError(word)


def _int64(digits: str) -> int:
    # Called for every integer: a length test spares most of them the range test.
    value = int(digits)
    if len(digits) > 18 and not -(1 << 63) <= value < 1 << 64:
        raise ValueError(digits)
    return value


def _double(digits: str) -> float:
    value = float(digits)
    if isinf(value):
        raise ValueError(digits)
    return value


def load(folder: Path, plan_hash: str | None, read: tuple[bytes, Any] | None = None,
         ) -> State | None:
    """The state in `folder` as plain records, when it is beyond doubt (see the module doc)
    and, given `plan_hash`, made from that plan by this reader; else None: ask the full
    reader. `read`: state.json's bytes and JSON as plan_folder read them from `folder`, not
    read again (a snapshot is replaced whole, never written in place: the bytes read are one
    snapshot, as those of a second read would be)."""
    path = folder / "state.json"
    try:
        raw = regular.read_bytes(path) if read is None else read[0]
        data = loads(raw, path) if read is None else read[1]
    except (OSError, StateError):
        return None
    if type(data) is not dict or data.get("schema_version") != SCHEMA_VERSION or (
            plan_hash is not None and (data.get("task_file_hash") != plan_hash
                                       or data.get("reader") != source.READER)):
        return None
    lines = b""
    if data.get("journal_id") is not None:
        try:
            lines = regular.read_bytes(folder / "state.journal")
        except FileNotFoundError:
            pass
        except OSError:
            return None
    try:
        if not _whole(STATES, data):
            return None
        tasks = data["tasks"]
        for i, task in enumerate(tasks, 1):
            if _task(task, i) is None or task["index"] != i:
                return None
            tasks[i - 1] = Record(task)
        data["retired"] = _runs(data["retired"])
        if data["retired"] is None or lines and not _journal(data, lines):
            return None
    except TypeError:
        return None
    return Record(data)  # type: ignore[return-value]


def _task(task: Any, count: int) -> Any:
    """A task's record, whole, its status known, its index among `count` tasks, with its runs
    whole and made records; else None."""
    if not _whole(TASKS, task) or not 1 <= task["index"] <= count \
            or task["status"] not in WORDS:
        return None
    task["history"] = _runs(task["history"])
    return None if task["history"] is None else task


def _journal(data: dict[str, Any], raw: bytes) -> bool:
    """Apply the journal's lines to the state `data`; False when one is not whole, not this
    snapshot's or not of the state's fields (the full reader says what it makes of it)."""
    tasks, top_fields = data["tasks"], STATES.tests
    applied = 0
    for line in journal_lines(raw, data["journal_id"], loads_line):
        task, top = _task(line.get("task"), len(tasks)), line.get("top") or {}
        if task is None or type(top) is not dict:
            return False
        for name, value in top.items():
            if name not in JOURNAL_TOP:
                return False
            check(name, top_fields[name], value)
        if "retired" in top:
            top["retired"] = _runs(top["retired"])
            if top["retired"] is None:
                return False
        tasks[task["index"] - 1] = Record(task)
        data.update(top)
        applied += 1
    return applied == raw.count(b"\n")


def journal_lines(raw: bytes, snapshot: str | None, parse: Callable[[bytes], Any],
                  ) -> Iterator[dict[str, Any]]:
    """The lines of a journal (`raw`) that go on the snapshot named `snapshot`, each parsed by
    `parse`: up to the first that is not JSON, not an object or another snapshot's. What
    follows the last newline was never finished, and is not read."""
    for line in raw.split(b"\n")[:-1]:
        try:
            data = parse(line)
        except ValueError:
            return
        if type(data) is not dict or data.get("snapshot") != snapshot:
            return
        yield data


def loads_line(line: bytes) -> Any:
    """A journal line's JSON, refusing what orjson refuses or reads otherwise (_parse)."""
    return _parse(line)


def _whole(table: Table, data: Any) -> bool:
    """Whether `data` is a record of `table` with every field, in order (TypeError: one is of
    the wrong type): a record short of a field takes the full reader's defaults."""
    if type(data) is not dict or tuple(data) != table.order:
        return False
    fits(table, data)
    return True


def _runs(runs: list[Any]) -> list[Record] | None:
    made = []
    for run in runs:
        if not _whole(ATTEMPTS, run):
            return None
        made.append(Record(run))
    return made
