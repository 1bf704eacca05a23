"""Typed events the runner emits; the console (and later other consumers) subscribe to them.
An event's `lane` names the worker it is about ("": a run's one lane), for a console of several."""

from __future__ import annotations

from dataclasses import fields
from typing import Callable, Union, get_args

import orjson

from agentloop.agents import AgentResult, Totals
from agentloop.files import jsonbytes

# Made when first used: a run makes under half of these (agentloop.ondemand).
from agentloop.ondemand import dataclass, made
from agentloop.run.lane_tag import LaneNote, lane


@dataclass(frozen=True)
class RunStarted:
    """A run begins: how many tasks are left of how many, and notes from preparing the VCS."""

    pending: int
    total: int
    vcs: str
    notes: tuple[str, ...] = ()
    agent: str = ""
    done: int = 0              # tasks done already (completed or checked off)
    parallel: int = 1          # groups at once, each in a working copy of its own
    in_lane: bool = False      # the agent works in a lane of its own, not the user's checkout
    lanes: str = ""            # the folder lanes live in (absolute), when there are any
    warnings: tuple[str, ...] = ()   # the plan's warnings said on stderr (plan.fences)


@dataclass(frozen=True)
class TaskStarted:
    """A task attempt begins."""

    index: int
    total: int
    group: str
    summary: str
    attempt: int
    iteration: int = 1
    position: int = 0          # its place among the tasks this run takes (0: not known)
    count: int = 0             # how many tasks this run takes
    lane: str = ""
    # Its number in the plan as the run last read it, edited meanwhile, when this began (the
    # live line's `task N`); `index` stays the run's own number, as the other events' (0: not
    # known, an events.jsonl of an older version).
    number: int = 0


@dataclass(frozen=True)
class ChangeCreated:
    """The VCS made the change this attempt's edits go into."""

    vcs: str
    change_id: str


@dataclass(frozen=True)
class AgentStarted:
    """The agent process starts; `resume` is the session it continues, if any."""

    log: str
    resume: str | None
    agent: str = ""
    role: str = "developer"    # developer | reviewer
    lane: str = ""


@dataclass(frozen=True)
class AgentActivity:
    """What the agent is doing now: a short line, its last tool call, its counts so far."""

    text: str
    tool: str = ""
    tool_calls: int = 0
    turns: int = 0          # 0: the agent does not say
    lane: str = ""


@dataclass(frozen=True)
class AgentFinished:
    """The agent process ended."""

    result: AgentResult
    seconds: float
    cost_usd: float     # this run's own cost (the CLI's total adds up over a resumed session)
    role: str = "developer"    # developer | reviewer
    lane: str = ""
    limited: bool = False   # a usage limit ended it: the wait that follows says so, once
    index: int = 0          # the task it ran for, as the other events name it (0: not known)


@dataclass(frozen=True)
class ChangeAbandoned:
    """An attempt's change was dropped (a failed or interrupted attempt); `kept`: where its
    edits were set aside first and how to bring them back ("" when it had none)."""

    vcs: str
    change_id: str
    kept: str = ""


@dataclass(frozen=True)
class RetryDecided:
    """After a failed attempt: whether the task runs again, why, and after how long a wait."""

    index: int
    attempt: int
    retry: bool
    kind: str            # transient | other
    reason: str
    hint: str = ""
    source: str = ""     # "advisor", "fallback: …", or "backoff" for transient failures
    wait_seconds: float = 0.0
    cost_usd: float = 0.0    # what the advisor's call cost, charged to the task's failed run


@dataclass(frozen=True)
class LimitWait:
    """A usage or rate limit: the run waits (not a failure, not an attempt)."""

    reason: str
    seconds: float
    until: float         # unix seconds
    wait: int            # this is the n-th wait of the run
    max_waits: int


@dataclass(frozen=True)
class LaneHeld:
    """A parallel run's lane waits, before its next agent run, for a usage limit that another
    lane met (or it met itself) to reset: held, not running."""

    until: float         # unix seconds
    lane: str = ""


@dataclass(frozen=True)
class LandingWaits:
    """A finished task's landing waits for files in the user's checkout (their uncommitted
    edits): which, since when, and the line said. The task's record gets it for --status from
    a `Waiting` value the lane hands to the controller (agentloop.run.decisions)."""

    files: tuple[str, ...]
    since: float         # unix seconds
    text: str
    lane: str = ""


@dataclass(frozen=True)
class LimitWaitOver:
    """The wait for a usage limit ended; the run goes on."""

    wait: int


@dataclass(frozen=True)
class MessageDistilled:
    """The commit message for a task's change: distilled by a small model, or the plain one."""

    index: int
    distilled: bool
    subject: str
    note: str = ""       # why the plain message was kept
    # What the call cost (charged to the task's run as paid, whatever the landing comes to):
    # beside AgentFinished's, what events.jsonl's costs add up to RunFinished's with.
    cost_usd: float = 0.0


@dataclass(frozen=True)
class ReviewStarted:
    """A reviewer round begins (--review): a fresh, read-only session looks at the change."""

    index: int
    round: int
    rounds: int


@dataclass(frozen=True)
class ReviewVerdict:
    """What a reviewer round came to: approved, feedback for the developer, or a failed run."""

    index: int
    round: int
    rounds: int
    verdict: str             # approved | feedback | failed
    text: str = ""           # the feedback, or why the reviewer's run failed
    again: bool = False      # failed: the reviewer runs once more
    wait_seconds: float = 0.0


@dataclass(frozen=True)
class CheckStarted:
    """One of the user's checks starts (task 0: the baseline before the first task)."""

    index: int
    command: str
    round: int
    log: str
    lane: str = ""


@dataclass(frozen=True)
class CheckFinished:
    """One of the user's checks ended; its output is in `log`."""

    index: int
    command: str
    exit_code: int
    seconds: float
    log: str
    round: int
    timed_out: bool = False


@dataclass(frozen=True)
class ChecksDone:
    """A round of a task's checks (task 0: the baseline) ended: how many passed, which failed
    (`pytest -q (exit 1)`), and how many fix rounds the task has in all."""

    index: int
    round: int
    rounds: int
    total: int
    seconds: float
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskFinished:
    """A task reached a final status in this run."""

    index: int
    status: str
    change_id: str | None
    files: int
    error: str | None
    empty: bool = False      # completed, but the task changed no files
    # Its number in the plan as the run last read it, edited meanwhile (TaskStarted's `number`,
    # read now): what the live line and the on-task hook name it by; `index` stays the run's.
    number: int = 0


@dataclass(frozen=True)
class HookFinished:
    """A hook ended (exit_code None: it could not start, or was stopped at its timeout)."""

    hook: str                # on-finish | on-task
    command: str
    exit_code: int | None
    seconds: float
    timed_out: bool
    log: str                 # hooks.log, which holds its output
    index: int = 0           # on-task: the task


@dataclass(frozen=True)
class Stopping:
    """A stop was taken (Ctrl+C, SIGTERM, SIGHUP): the run waits for its `agents` running
    agents to end, each asked to (SIGINT), then made to (SIGTERM, SIGKILL): cut short within
    `within` seconds at most."""

    agents: int
    within: float


@dataclass(frozen=True)
class RunFinished:
    """The run ended (all done, or stopped); counts by status, cost and time."""

    counts: tuple[tuple[str, int], ...]   # by status: the plan's tasks as it reads at the end
    cost_usd: float
    seconds: float
    logs: str
    stopped: str | None = None   # why the run stopped early, if it did
    notes: tuple[str, ...] = ()  # things the user should look at (tasks that keep stalling)
    tokens: tuple[tuple[str, int], ...] = ()   # token totals of the task file's runs so far
    unfinished: tuple[int, ...] = ()  # tasks this run set out to run that did not complete
    completed: tuple[int, ...] = ()   # tasks this run completed with a change
    # Tasks the user removed from the plan while the run worked, not started: not in `counts`
    # (they are not pending: the run's last save drops their records, agentloop.run.loop).
    removed: tuple[int, ...] = ()
    cost_known: bool = True      # False: some runs reported tokens but no dollars
    # False: no agent ever ran for this plan (the cost and tokens above count nothing), so
    # the closing line says nothing of them; True with nothing reported is a cost not known.
    agents_ran: bool = True
    # The branch the tasks landed on, when your checkout is on another one now (you switched
    # mid-run, git): a task's commit is reverted there. Empty: the checkout is on it.
    landed_on: str = ""
    # The change of `completed`'s last task, the closing undo line's example: by then the
    # state's records may be numbered as the plan edited meanwhile reads (the run's numbers
    # are these events').
    last_change: str = ""
    # What a user reads after the run's end names tasks as the plan reads then (`--status`'s
    # numbers), which an edit the run took in may have renumbered: `unfinished` in those
    # numbers, and the words of the unfinished tasks the plan no longer has.
    unfinished_now: tuple[int, ...] = ()
    unfinished_removed: tuple[str, ...] = ()
    # How the closing undo line names last_change's task: `task 4`, or its words in quotes when
    # the plan no longer has it.
    last_named: str = ""
    # The tasks of the state the plan no longer has at the run's end, having had them while the
    # run worked (removed or reworded after they ran, or while they did): their words and
    # status. Not in `counts`, which count the plan as it reads then (`--status`'s totals).
    removed_since: tuple[tuple[str, str], ...] = ()
    # Of the completed tasks in `counts`, those whose change you took back while the run
    # worked (`jj abandon`): completed still, as `--status` counts them, their change gone.
    taken_back: int = 0
    # The code the run exits with (agentloop.run.summary.ended_with): `--status --follow` ends
    # with it too. None: written by an agent-loop before it was kept.
    exit_code: int | None = None


Event = Union[RunStarted, TaskStarted, ChangeCreated, AgentStarted, AgentActivity, AgentFinished,
              ChangeAbandoned, RetryDecided, LimitWait, LimitWaitOver, MessageDistilled,
              TaskFinished, RunFinished, ReviewStarted, ReviewVerdict, CheckStarted,
              CheckFinished, ChecksDone, HookFinished, LaneNote, LaneHeld, LandingWaits,
              Stopping]
Emit = Callable[[Event], None]

# events.jsonl: every event is one JSON object a line: {"v": SCHEMA_VERSION, "type": <class name>,
# "time": <UTC ISO 8601>, <the event's fields>}. AgentFinished's `result` is an object with
# AgentResult's fields. A new field or event type is a compatible change; renaming or removing
# one raises SCHEMA_VERSION.
SCHEMA_VERSION = 1


def event_types() -> dict[str, type]:
    """Every event class by its name in events.jsonl, each made (agentloop.ondemand)."""
    return {cls.__name__: made(cls) for cls in get_args(Event)}


def to_json(event: Event, time: str) -> bytes:
    """One line of events.jsonl."""
    cls = type(event)
    body = {"v": SCHEMA_VERSION, "type": cls.__name__, "time": time}
    # Field by field, the nested records (AgentResult) left to orjson, which writes a dataclass
    # as dataclasses.asdict would, without its deep copy: a tenth of the time. The names are
    # looked up once per class: dataclasses.fields() builds its tuple again at every call.
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES.setdefault(cls, tuple(f.name for f in fields(event)))
    body.update({name: getattr(event, name) for name in names})
    group = lane()
    if group and not body.get("lane"):  # a parallel run's lane, for events without the field
        body["lane"] = group
    return jsonbytes.dumps(body) + b"\n"


_NAMES: dict[type, tuple[str, ...]] = {}


def from_json(line: bytes) -> Event | None:
    """An event read back from events.jsonl; None for a line this version does not know."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a line cut short by a crash
    cls = event_types().get(str(data.get("type"))) if isinstance(data, dict) else None
    if cls is None:
        return None
    names = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    if cls is AgentFinished:
        known = {f.name for f in fields(made(AgentResult))}
        result = {k: v for k, v in values["result"].items() if k in known}
        totals = result.get("totals")
        result["totals"] = Totals(**totals) if isinstance(totals, dict) else Totals()
        values["result"] = AgentResult(**result)
    for name, value in values.items():
        if isinstance(value, list):
            values[name] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return cls(**values)  # type: ignore[no-any-return]


def fan_out(*consumers: Emit) -> Emit:
    """One emit that hands each event to every consumer in turn."""
    def emit(event: Event) -> None:
        for consume in consumers:
            consume(event)
    return emit
