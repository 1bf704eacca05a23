"""The shape of state.json's three records (a plan's state, a task's, an agent run's): each
field in the order the writer writes it, with the JSON value types it takes. The one table both
readers check a record by: the full one (agentloop.state.schema, into its classes) and the plain
one `--status` takes (agentloop.state.plain); the classes' fields are held to it when schema is
imported, so the three cannot drift apart.

No dataclasses and no typing here: `--status` imports this module and neither of those.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    # A field's test: the JSON value types a scalar takes, or a test of a list's or a dict's values.
    Test = frozenset[type] | Callable[[Any], bool]

# 2: state.json may come with a journal (journal_id); an agent-loop that reads only 1 would
# read the snapshot without it and run finished tasks again, so it must refuse the file.
# 3: a task may be `conflicted` (a parallel run's group whose change does not fit the main line);
# an agent-loop that reads only 2 would call such a state damaged, so it must refuse it as newer.
# 4: a task may be `landing` (its commit on its way to the branch beside the next agent, or left
# so by a kill); an agent-loop that reads only 3 would call such a state damaged.
SCHEMA_VERSION = 4

_NONE = type(None)
STR, INT, BOOL = frozenset({str}), frozenset({int}), frozenset({bool})
FLOAT = frozenset({float, int})   # a whole number of dollars is written without its ".0"
STR_OR_NONE, INT_OR_NONE = STR | {_NONE}, INT | {_NONE}
# A list of records (each checked by its own table as it is read), or an object of any values.
RECORDS, OBJECT = frozenset({list}), frozenset({dict})


def _strs(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _objects(v: Any) -> bool:
    return type(v) is list and all(type(x) is dict for x in v)


def _counts(v: Any) -> bool:
    return type(v) is dict and all(type(x) is int for x in v.values())


def _lists_of_strs(v: Any) -> bool:
    return type(v) is dict and all(_strs(x) for x in v.values())


# An agent run (schema.Attempt).
ATTEMPT: tuple[tuple[str, Test], ...] = (
    ("number", INT), ("started_at", STR), ("finished_at", STR_OR_NONE), ("outcome", STR),
    ("iteration", INT), ("reason", STR_OR_NONE), ("hint", STR_OR_NONE), ("log", STR_OR_NONE),
    ("session_id", STR_OR_NONE), ("resumed", BOOL), ("workdir", STR_OR_NONE),
    ("change_id", STR_OR_NONE), ("commit_id", STR_OR_NONE), ("cost_usd", FLOAT),
    ("session_cost_usd", FLOAT), ("session_usage", _counts), ("cost_known", BOOL),
    ("helper_cost_usd", FLOAT), ("model", STR_OR_NONE), ("usage", _counts),
    ("num_turns", INT_OR_NONE), ("duration_ms", INT_OR_NONE), ("exit_code", INT_OR_NONE),
    ("role", STR), ("round", INT), ("verdict", STR_OR_NONE), ("checks", _objects),
    ("work_kept", STR_OR_NONE), ("other_plan", STR_OR_NONE), ("resets_at", STR_OR_NONE))

# A task (schema.TaskState); `history` holds its ATTEMPT records.
TASK: tuple[tuple[str, Test], ...] = (
    ("index", INT), ("group", STR), ("task", STR), ("line", INT), ("summary", STR),
    ("log_name", STR), ("status", STR), ("session_id", STR_OR_NONE), ("change_id", STR_OR_NONE),
    ("commit_id", STR_OR_NONE), ("files", _strs), ("log", STR_OR_NONE), ("attempts", INT),
    ("started_at", STR_OR_NONE), ("finished_at", STR_OR_NONE), ("cost_usd", FLOAT),
    ("error", STR_OR_NONE), ("stalled_runs", INT), ("feedback", STR_OR_NONE), ("checks", _strs),
    ("optional", BOOL), ("waiting", STR_OR_NONE), ("done_as", STR_OR_NONE),
    ("aside", STR_OR_NONE), ("history", RECORDS))

# A plan's state (schema.State); `tasks` holds TASK records, `retired` ATTEMPT ones.
STATE: tuple[tuple[str, Test], ...] = (
    ("task_file", STR), ("task_file_hash", STR), ("tasks", RECORDS), ("schema_version", INT),
    ("started_at", STR), ("updated_at", STR), ("vcs", STR_OR_NONE), ("agent", STR_OR_NONE),
    ("context", STR_OR_NONE), ("title", STR_OR_NONE), ("ignored", _objects), ("warnings", _strs),
    ("reader", INT), ("folded", _objects), ("depends", _lists_of_strs),
    ("journal_id", STR_OR_NONE), ("retired", RECORDS), ("remembered", OBJECT),
    ("history_mark", STR_OR_NONE))


class Table:
    """One record's table made ready to check by: its fields' order and tests, the tests of its
    lists and dicts alone, and the patterns of value types already found to fit."""

    __slots__ = ("name", "order", "tests", "nested", "fit")

    def __init__(self, name: str, table: tuple[tuple[str, Test], ...]) -> None:
        self.name = name
        self.order = tuple(field for field, _ in table)
        self.tests = dict(table)
        self.nested = [(field, t) for field, t in table if not isinstance(t, frozenset)]
        self.fit: set[tuple[type, ...]] = set()


ATTEMPTS, TASKS, STATES = Table("attempt", ATTEMPT), Table("taskstate", TASK), \
    Table("state", STATE)


def known(table: Table, data: Any) -> dict[str, Any]:
    """The fields of `table` in `data`, each of its type; TypeError names a bad one."""
    if type(data) is not dict:
        raise TypeError(f"{table.name} record is {type(data).__name__}, not an object")
    if tuple(data) == table.order:
        fits(table, data)
        return data
    found = {}
    tests = table.tests
    # Unknown keys (from a newer minor writer, or hand edits) are dropped rather than fatal.
    for name, value in data.items():
        test = tests.get(name)
        if test is not None:
            check(name, test, value)
            found[name] = value
    return found


def fits(table: Table, data: dict[str, Any]) -> None:
    """Check a record of every field in `table`'s order, as the writer writes it; TypeError
    names a field of the wrong type."""
    # A plan's thousands of records come in a few patterns of types, so a pattern seen to fit
    # is not checked field by field again; only what is in a list or a dict is.
    shape = tuple(map(type, data.values()))
    if shape in table.fit:
        for name, test in table.nested:
            value = data[name]
            if value and not test(value):  # type: ignore[operator]
                raise TypeError(f"{name} is {type(value).__name__} {str(value)[:40]!r}")
        return
    for name, value in data.items():
        check(name, table.tests[name], value)
    table.fit.add(shape)


def check(name: str, test: Test, value: Any) -> None:
    """TypeError when `value` is not of the type `test` allows for the field `name`."""
    if not (type(value) in test if isinstance(test, frozenset) else test(value)):
        raise TypeError(f"{name} is {type(value).__name__} {str(value)[:40]!r}")
