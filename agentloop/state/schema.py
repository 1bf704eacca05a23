"""What agent-loop remembers about a task file: the records (State, TaskState, Attempt), their
schema version and upgrade chain, and reading them back (validated, never trusted blindly).
"""

from __future__ import annotations

import math
import time
from dataclasses import field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import orjson

from agentloop.errors import StateError
from agentloop.files import jsonbytes
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.state import fields as fields_table
from agentloop.state.fields import SCHEMA_VERSION
from agentloop.state.outcome import AttemptOutcome
from agentloop.state.status import TaskStatus

if TYPE_CHECKING:
    from agentloop.plan.parse import Task

_STATUS = {s.value: s for s in TaskStatus}   # a record's status word, read back
STATUSES = tuple(_STATUS)
R = TypeVar("R")


def now() -> str:
    """The current UTC time as an ISO 8601 string (frozen in tests by freezegun)."""
    global _stamp
    # Asked a dozen times a task, and the same within a second: made once a second.
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, datetime.fromtimestamp(second, timezone.utc).isoformat())
    return _stamp[1]


_stamp = (-1, "")


def iso(seconds: float) -> str | None:
    """Unix seconds as an ISO 8601 UTC string, as the records write times; None for a time no
    date can hold (an agent's reset in milliseconds, or garbled): not kept, where its record's
    write would stop the run with an internal error."""
    try:
        return datetime.fromtimestamp(math.ceil(seconds), timezone.utc).isoformat()
    except (OverflowError, ValueError, OSError):
        return None


def unix(stamp: str) -> float | None:
    """An ISO 8601 time of a record as unix seconds; None for one that does not read as such."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


@dataclass
class Attempt:
    """One run of the agent for a task."""

    number: int
    started_at: str
    finished_at: str | None = None
    # running | completed | failed | interrupted | limited | blocked | continued (an iteration
    # that went on) | stopped (the agent reported a fatal error) | paused (failed after the
    # whole run was stopped, a machine asleep: no attempt)
    outcome: str = AttemptOutcome.RUNNING
    iteration: int = 1
    reason: str | None = None
    hint: str | None = None
    log: str | None = None
    session_id: str | None = None
    resumed: bool = False
    # Where the agent ran, from the repository root ("." the checkout, else its lane): a session
    # goes on only where it began, its earlier turns naming that folder's paths.
    workdir: str | None = None
    change_id: str | None = None
    commit_id: str | None = None
    cost_usd: float = 0.0
    # The CLI's total_cost_usd, which adds up over a resumed session; cost_usd is this run's part.
    session_cost_usd: float = 0.0
    # Likewise the session's running token totals after this run, for agents that report those.
    session_usage: dict[str, int] = field(default_factory=dict)
    # False when the agent reports tokens but no dollars: its cost_usd is not a price.
    cost_known: bool = True
    # What the small calls about this attempt cost: the retry advisor, the commit distiller.
    helper_cost_usd: float = 0.0
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    num_turns: int | None = None
    duration_ms: int | None = None
    exit_code: int | None = None
    # With --review (agentloop.review): who ran, in which review round (0: the attempt's own
    # runs), and what the reviewer said ("approved" or "feedback"; its feedback is `reason`).
    role: str = "developer"
    round: int = 0
    verdict: str | None = None
    # The user's checks that ran after this run (agentloop.checks.record): command, exit_code,
    # seconds, log, round, timed_out.
    checks: list[dict[str, Any]] = field(default_factory=list)
    # An attempt whose agent had finished when the run was stopped (Ctrl+C in its checks): the
    # VCS's line that says where its work is kept aside. The task's next attempt brings that
    # work back and runs only the checks, not the agent (agentloop.run.attempt).
    work_kept: str | None = None
    # A run paid for another plan, whose state this plan's took over when it was renamed over
    # that plan (`mv a.md b.md` over a b.md that had run; agentloop.state.project): that plan's
    # name. Its cost counts in this plan's totals, not against its --budget (tally.spent). An
    # older agent-loop drops the field (it reads unknown fields as a newer minor writer's) and
    # counts the run as this plan's, as it always did: no schema version for it.
    other_plan: str | None = None
    # A usage limit's reported reset (ISO 8601, UTC), on a `limited` record: a re-run waits for
    # it (agentloop.run.waits) before any agent starts, where it would pay for a run that cannot
    # succeed. An older agent-loop drops the field and runs the task at once, as it did.
    resets_at: str | None = None


@dataclass
class TaskState:
    """A task as the state records it: what the file said, and what happened to it."""

    index: int
    group: str
    task: str
    line: int
    summary: str
    log_name: str
    status: str = TaskStatus.PENDING   # a TaskStatus; a str on disk
    session_id: str | None = None
    change_id: str | None = None
    # jj: None beside a git commit's id as change_id: the task was done as that git commit,
    # which jj's repository does not hold (agentloop.state.whereabouts.jj_lacks).
    commit_id: str | None = None
    files: list[str] = field(default_factory=list)
    log: str | None = None
    attempts: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    cost_usd: float = 0.0
    error: str | None = None
    # Runs of the tool in a row in which this task started but did not complete.
    stalled_runs: int = 0
    # The reviewer's last feedback, for a task left `unapproved` when the review rounds ran out.
    feedback: str | None = None
    # The checks the plan declares for this task (its file's and its group's), kept with the
    # task so an unchanged file is not parsed again; --check's are added at run time.
    checks: list[str] = field(default_factory=list)
    # Marked optional by the plan (`- [ ]*`): run only with --include-optional.
    optional: bool = False
    # What a finished task's landing waits for (the user's edits to its files), while it does.
    waiting: str | None = None
    # The words a completed task was done with, when the plan has reworded it since: it stays
    # done (its work is in history), and `--task N --again` runs the new words.
    done_as: str | None = None
    # Of a completed task's note (`error`), the part that says what its agent did to your
    # checkout (agentloop.run.lane), kept apart from what the task's own outcome noted.
    aside: str | None = None
    history: list[Attempt] = field(default_factory=list)

    @classmethod
    def from_task(cls, task: Task) -> "TaskState":
        """A fresh, pending record for a parsed task (`[x]` items start as skipped)."""
        return cls(index=task.index, group=task.group, task=task.text, line=task.line,
                   summary=task.summary, log_name=task.log_name,
                   status=TaskStatus.SKIPPED if task.checked else TaskStatus.PENDING,
                   checks=list(getattr(task, "checks", ())),
                   optional=bool(getattr(task, "optional", False)))  # when the plan format has them


@dataclass
class State:
    """Everything agent-loop remembers about one task file."""

    task_file: str
    task_file_hash: str
    tasks: list[TaskState]
    schema_version: int = SCHEMA_VERSION
    started_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    vcs: str | None = None
    agent: str | None = None
    # The plan's own context: the text before its first group (goal, architecture, ...).
    context: str | None = None
    # The plan's `#` title: what its tasks outside any `##` group are filed under in history.
    title: str | None = None
    # What the plan holds that is never run ({"line", "text", "why"}), and warnings about it.
    ignored: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The plan reader that read the file (agentloop.plan.source.READER; 0: before it had one).
    reader: int = 0
    # Sub-tasks folded into the task before them by their numbers ({"line", "text", "into"}).
    folded: list[dict[str, Any]] = field(default_factory=list)
    # Which groups wait for which (`Depends on:` lines): group -> the groups it waits for.
    depends: dict[str, list[str]] = field(default_factory=dict)
    # The journal whose lines go on top of this snapshot (agentloop.journal); None: none.
    journal_id: str | None = None
    # The agent runs of tasks the plan no longer has (reworded or removed): money spent stays
    # spent, so receipts and --budget count them, and a session they ran in keeps its totals.
    retired: list[Attempt] = field(default_factory=list)
    # The options of the plan's last run that a re-run keeps or names (agentloop.run.remembered).
    remembered: dict[str, Any] = field(default_factory=dict)
    # Where the history stood when the run last found every finished task's change in it, with
    # the changes it found (agentloop.vcs.history.mark): --status asks the VCS only past it.
    history_mark: str | None = None

    def to_bytes(self) -> bytes:
        """Serialize, checking first that what we write is something we can read back."""
        _validate(self)
        # orjson serializes dataclasses natively, far faster than dataclasses.asdict.
        return jsonbytes.dumps(self, option=orjson.OPT_INDENT_2)


def _validate(state: State) -> None:
    problem = _problem(state)
    if problem:
        raise StateError(f"internal error: {problem}")


def _problem(state: State) -> str | None:
    for i, t in enumerate(state.tasks, 1):
        if t.index != i:
            return f"task {t.index} recorded at position {i}"
        if t.status not in STATUSES:
            return f"task {t.index} has unknown status {t.status!r}"
    return None


# Each record class and its table (agentloop.state.fields), which both readers check by.
_TABLES: dict[type, fields_table.Table] = {Attempt: fields_table.ATTEMPTS,
                                           TaskState: fields_table.TASKS,
                                           State: fields_table.STATES}


def _held_to_their_tables() -> None:
    """Stop the import when a record class's fields are not its table's, in its order: the
    readers would drop the field the table lacks, and --status would not show it."""
    for cls, table in _TABLES.items():
        if tuple(f.name for f in fields(cls)) != table.order:
            raise RuntimeError(f"internal error: {cls.__name__}'s fields differ from its table "
                               "in agentloop.state.fields")


_held_to_their_tables()


def _known(cls: type, data: Any) -> dict[str, Any]:
    """The fields of `cls` in `data`, each of its declared type; TypeError names a bad one."""
    return fields_table.known(_TABLES[cls], data)


def _made(cls: type[R], known: dict[str, Any]) -> R:
    """An instance of `cls` from the fields `_known` found."""
    if tuple(known) == _TABLES[cls].order:
        # Every field in order: Python binds thirty arguments by position far faster than by
        # name (it compares each keyword with the parameters' names).
        return cls(*known.values())
    return cls(**known)


def _one_to_two(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "schema_version": 2, "journal_id": None}  # no journal yet


# Each entry upgrades a state dict from version N to N+1. Version 1 is the first; the chain
# grows here as the schema changes, so old state files keep loading.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _one_to_two, 2: lambda data: {**data, "schema_version": 3},  # 3 only adds a status
    3: lambda data: {**data, "schema_version": 4}}  # 4 likewise (landing)


def task_from_dict(data: Any) -> TaskState:
    """A task's record from its JSON; KeyError or TypeError names what is wrong."""
    record = _known(TaskState, data)
    record["history"] = _attempts(record.get("history", []))
    status = _STATUS.get(record.get("status", ""))
    if status is not None:  # else left as read, for _problem to name
        record["status"] = status
    return _made(TaskState, record)


def top_from_dict(data: Any) -> dict[str, Any]:
    """The state's fields besides its tasks, each checked for its type."""
    top = {k: v for k, v in _known(State, data).items() if k != "tasks"}
    if "retired" in top:
        top["retired"] = _attempts(top["retired"])
    return top


def _attempts(runs: list[Any]) -> list[Attempt]:
    return [_made(Attempt, _known(Attempt, a)) for a in runs]



def from_bytes(raw: bytes, where: Path) -> State:
    """Parse state.json, upgrading old schemas and refusing newer ones with a clear message."""
    return from_json(loads(raw, where), where)


def loads(raw: bytes, where: Path) -> Any:
    """The JSON of state.json's bytes; StateError when they are not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise StateError(f"{where} is not valid JSON ({exc}); move it aside or run with "
                         "--reset") from None


def from_json(data: Any, where: Path) -> State:
    """The state from state.json's JSON (`loads`), as from_bytes reads it; `data` is used up
    (its records become the state's)."""
    if not isinstance(data, dict) or not isinstance(data.get("schema_version"), int):
        raise StateError(f"{where} is not an agent-loop state file; move it aside or run with "
                         "--reset")
    version = data["schema_version"]
    if version > SCHEMA_VERSION:
        raise StateError(f"{where} was written by a newer agent-loop (schema {version}, this one "
                         f"reads up to {SCHEMA_VERSION}); upgrade agent-loop or run with --reset")
    while version < SCHEMA_VERSION:
        if version not in UPGRADES:
            raise StateError(f"{where} has schema {version}, which this agent-loop cannot upgrade; "
                             "run with --reset")
        data = UPGRADES[version](data)
        version = data["schema_version"]
    try:
        record = _known(State, data)
        record["tasks"] = [task_from_dict(t) for t in record["tasks"]]
        if "retired" in record:
            record["retired"] = _attempts(record["retired"])
        state = _made(State, record)
    except (KeyError, TypeError) as exc:
        raise StateError(f"{where} is damaged ({exc}); move it aside or run with --reset") from None
    problem = _problem(state)
    if problem:
        raise StateError(f"{where} is damaged ({problem}); move it aside or run with --reset")
    return state
