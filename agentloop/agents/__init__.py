"""The agent protocol: what the run core asks of a coding agent, and what it gets back.

The core knows agents only through this module. Everything about one agent program (its argv,
its output format, how its errors read, what it costs) lives in that agent's module here, and
the name -> agent table below is the one place that lists them: adding an agent is one module
and one entry.
"""

from __future__ import annotations

import importlib
from dataclasses import field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol, runtime_checkable

# The agent's environment is the package's to decide: run/start.py asks for it here.
from agentloop.agents.environment import SESSION_VARIABLES, child_env  # noqa: F401
from agentloop.ondemand import dataclass as on_first_use
from agentloop.ondemand import dataclass_now as dataclass

if TYPE_CHECKING:
    from agentloop.sandbox import Sandbox

# The loop's error classes for a failed run. limit: wait for the reset, not an attempt;
# transient: retried after a backoff; blocking: every later run would fail the same way, the
# run stops; budget: cut short by its own --task-budget; other: the retry advisor judges.
LIMIT, TRANSIENT, BLOCKING, BUDGET, OTHER = "limit", "transient", "blocking", "budget", "other"


# Failure and Answer are made when first used (agentloop.ondemand): a run whose tasks succeed
# and that makes no helper call never builds either.
@on_first_use(frozen=True)
class Failure:
    """How the core should treat a failed run."""

    kind: str                       # LIMIT | TRANSIENT | BLOCKING | BUDGET | OTHER
    reason: str                     # one line for the user
    resets_at: float | None = None  # unix seconds when a limit resets, if known


# Activity and AgentResult are made by an agent's run, after it started: a run makes them
# beside its first lane's creation (agentloop.run.start), off the first agent's path.
@on_first_use(frozen=True)
class Activity:
    """What an agent is doing now, as far as its output tells, for the console's live line."""

    text: str             # the last thing it did or said, one short line
    tool: str = ""        # its last tool call ("Edit src/app.py"); "" before the first
    tool_calls: int = 0   # tool calls so far in this run
    turns: int = 0        # model turns so far in this run; 0 where the agent does not say


@dataclass(frozen=True)
class Totals:
    """What a session has used so far: some agents report running totals, not a run's part."""

    cost_usd: float = 0.0
    usage: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentRun:
    """One run of the agent on one prompt."""

    prompt: str
    model: str
    cwd: Path
    log: Path                     # the human-readable log, written while the agent runs
    raw_log: Path                 # the agent's raw output, one JSON object a line
    resume: str | None = None     # session id to continue, or None for a fresh session
    header: tuple[tuple[str, str], ...] = ()   # extra "key: value" lines for the log header
    timeout: float | None = None
    budget_usd: float | None = None            # the agent's own spending cap for this run
    read_only: bool = False       # the reviewer: may read the project's files, never change them
    before: Totals = Totals()     # the resumed session's totals after its last recorded run
    # Called now and then while the agent runs (at least every few tenths of a second, output
    # or not), in the thread that runs it: the run's own work that need not wait for its end.
    meanwhile: Callable[[], None] | None = field(default=None, compare=False)
    # Variables set for this run on top of the agent's environment (its lane's reflog mark).
    env: tuple[tuple[str, str], ...] = ()


@on_first_use(frozen=True)
class AgentResult:
    """What one run produced. `ok` is False for any failure; `error` then says why in one line.

    `cost_usd` and `usage` are this run's own part; `totals` is the session's running total
    after it, which the core keeps and hands back as `AgentRun.before` when it resumes.
    """

    ok: bool
    exit_code: int | None
    session_id: str | None
    text: str = ""
    error: str | None = None
    cost_usd: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    num_turns: int | None = None
    duration_ms: int | None = None
    permission_denials: int = 0
    api_error_status: int | None = None   # the HTTP status of an API failure, where known
    api_error_type: str | None = None     # the API's error type, e.g. rate_limit_error
    api_error: str | None = None          # a finer cause where the agent gives one
    limit_resets_at: float | None = None  # unix seconds, when the agent reports a limit's reset
    stderr: str = ""                      # the last lines the agent wrote to stderr
    timed_out: bool = False
    model: str | None = None              # the model the agent ran
    subtype: str | None = None            # the agent's own name for how the run ended
    cost_known: bool = True               # False: the agent reports tokens, not dollars
    unreported: bool = False              # True: gone before it said what it spent (unpriceable)
    paused: float = 0.0                   # seconds the whole run was stopped (a machine asleep)
    totals: Totals = Totals()

    def detail(self) -> str:
        """Why it failed, in one line of at most 300 characters: its error, else its text,
        else its exit code."""
        text = (self.error or self.text or f"exit {self.exit_code}").strip()
        line = " ".join(text.split())
        return line if len(line) <= 300 else line[:299] + "…"


@on_first_use(frozen=True)
class Answer:
    """What a short, tool-less helper call (retry advisor, commit messages) said."""

    text: str
    cost_usd: float = 0.0
    error: str | None = None     # why the call failed, or None


@dataclass(frozen=True)
class Models:
    """An agent's default models: for tasks, for the reviewer, for the small helper calls."""

    task: str
    review: str
    helper: str


class Agent(Protocol):
    """A coding agent the loop can drive."""

    name: str
    models: Models
    reports_cost: bool   # False: it reports tokens only, and agents.prices prices them
    # True: it holds a run to AgentRun.budget_usd, so --budget counts a running task at its cap.
    caps_spend: bool

    def check(self) -> None:
        """Raise AgentBlocked (ProgramNotFound included) when the agent cannot run at all."""

    def run(self, request: AgentRun, on_activity: Callable[[Activity], None]) -> AgentResult:
        """Run the agent; `on_activity` hears of each thing it does."""

    def classify(self, result: AgentResult, now: datetime) -> Failure:
        """Sort a failed result into the loop's error classes (`now` reads reset times)."""

    def ask(self, prompt: str, model: str, cwd: Path, timeout: float = 180) -> Answer:
        """A fresh, tool-less, read-only call with no session kept; never raises for its own
        problems (they are in `error`); Ctrl+C goes through."""


@runtime_checkable
class ReadsBack(Protocol):
    """An agent whose raw log (AgentRun.raw_log) tells how a run ended."""

    def read_back(self, request: AgentRun) -> AgentResult | None:
        """The result of the run `request` describes, read from its raw log alone, when the
        log ends in a result that says it ended well; None otherwise."""


def ended_well(agent: Agent, request: AgentRun) -> AgentResult | None:
    """What a run whose end nobody recorded ended with (agent-loop was killed as its agent
    ended), when its raw log says it ended well; None otherwise, or when the agent cannot
    tell."""
    return agent.read_back(request) if isinstance(agent, ReadsBack) else None


# The loop's rules for every agent's developer runs, and the reviewer's rules; each agent hands
# them over in its own way (Claude: appended to its system prompt).
LOOP_RULES = """\
You are working through a task list inside agent-loop, unattended. Nobody will answer questions.
- Work autonomously: use every tool you need, decide for yourself, and finish the task.
- Do not ask questions; when something is unclear, make the sensible choice and say so.
- Do not commit, branch, stash or otherwise touch version control: agent-loop puts your changes
  into their own change (jj or git) after you finish.
- End your final message with two short sections, each a few lines at most:
  Progress: what is done and what is left of this task.
  Learnings: facts about this project worth knowing for later tasks (commands, layout,
  pitfalls); write "none" when there are none.
- After them, on a line of its own, you may end with one signal:
  TASK_COMPLETE            the task is fully done (when asked to say so);
  TASK_BLOCKED: <reason>   you cannot do this task without a human (missing access, a decision);
  AGENT_LOOP_ERROR: <reason>  something is so wrong that the whole run must stop."""

# The verdict format itself is in the reviewer's prompt (agentloop/verdict.py).
REVIEW_RULES = """\
You are the reviewer inside agent-loop, which has a coding agent work through a task list
unattended. Nobody will answer questions. You can read and search the project's files; you
cannot change them, and you must not try. Judge the change you are shown and end with the
verdict line your prompt asks for."""


# name -> "module:factory"; a factory takes (program, env, sandbox) and returns an Agent that
# starts every process it runs through `common.confined`, in the sandbox when given. Imported
# only when chosen, so --status and --help never load an agent module.
AGENTS: dict[str, str] = {
    "claude": "agentloop.agents.claude:ClaudeAgent",
    "codex": "agentloop.agents.codex:CodexAgent",
    "rehearse": "agentloop.agents.rehearse:RehearsalAgent",
}


def make_agent(name: str, program: str | None = None, env: Mapping[str, str] | None = None,
               sandbox: Sandbox | None = None) -> Agent:
    """The agent called `name`, running `program` (None: its own default or env variable),
    inside `sandbox` when given (--sandbox)."""
    module, factory = AGENTS[name].split(":")
    agent: Agent = getattr(importlib.import_module(module), factory)(program, env, sandbox)
    return agent


def own_layers(agent: Agent) -> str:
    """Which of the agent program's own sandboxes are on, in its adapter's words."""
    said = getattr(agent, "own_sandbox", "")
    return said if isinstance(said, str) and said else "none"


def clean(text: str) -> str:
    """Text safe to hand to a program as an argument or a prompt: no NUL bytes, valid UTF-8."""
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def unpriced(reports_cost: bool, models: Iterable[str], given: Iterable[tuple[str, str]] = ()
             ) -> list[str]:
    """The models a budget could not be kept for (agents/prices.py): none when the agent
    reports dollars itself, else those without rates."""
    from agentloop.agents import prices  # only a run with a budget asks

    return prices.unpriced(reports_cost, models, given)


def unreported(began: bool, reported: bool) -> bool:
    """A run that began (its CLI named a session) and was gone before it said what it spent
    (killed, crashed, timed out, its last line cut off): it may have spent anything, and $0 as
    known would make every total and the budget read low without a word. A CLI that never began
    spent nothing."""
    return began and not reported


def priced(result: AgentResult, given: Iterable[tuple[str, str]] = ()) -> AgentResult:
    """A run that reported tokens but no dollars, priced from its model's rates (the user's
    `prices`, then agents/prices.py's table) when known; otherwise as it was (cost unknown).
    A run gone before it reported anything stays of unknown cost: no rate prices it."""
    if result.cost_known or result.unreported:
        return result
    from agentloop.agents.prices import rates_for  # only a run of an agent that reports tokens

    rates = rates_for(result.model, given)
    if rates is None:
        return result
    return replace(result, cost_usd=round(rates.cost(result.usage), 6), cost_known=True)
