"""The budget across K lanes: which task may start while others run, and what a stop suggests.

A sequential run starts a task while what the plan has spent is under --budget; the task that
crosses it is the last. With K lanes that rule alone would let K tasks start on the same few
cents. So a task starting beside others also counts what each running task may still spend, its
reservation. With caps, K lanes pass the budget by no more than a sequential run does, one
attempt's cap; without, by one task's cost plus what each running task costs beyond the estimate.

A running task's reservation is its cap where there is one (the agent can cap a run's spend and
--task-budget sets that cap: each of the attempt's agent runs may spend it), else the most a task
of this plan has cost so far. Before any task of the plan has finished there is no such figure:
a reservation is unknown, and nothing else starts beside it (one task at a time until the first
finishes, so K lanes never start blind). agent-loop never sets a cap of its own to squeeze a task
into what is left: a run cut short is paid for, then paid again by the retry.

An agent run stopped before it reported its cost (Ctrl+C, a kill) was paid for all the same, by
an amount nobody knows. Counted as nothing, a plan's interrupted runs read as money not spent,
and as tasks that cost nothing: a re-run then started every lane at once on a budget mostly
gone. So against the budget such a run counts as one run of known cost: the cap of one run where
there is one, else the costliest run of this plan whose cost is known (none known yet: it counts
nothing, and the lanes start one at a time until one is). The costliest, not the mean: a budget
is a promise about money, and a run cut short may well have cost as much as a whole one. A run
a kill -9 left open (no exit code, not finished) counts so from the re-run's start, before its
lane settles it: with K lanes another lane asks the budget before that, and counted only once
settled, the killed run let one more agent start on a budget already spent. Settled, it counts
as any interrupted run, once.

Plain functions over numbers, and the purse that holds the running attempts' reservations under
the run's shared lock; a lane takes one before each attempt (agentloop.run.lane).
"""

from __future__ import annotations

import math
import threading
from enum import Enum
from typing import Callable, Iterable

from agentloop.errors import BudgetReached
from agentloop.ondemand import dataclass
from agentloop.options.record import RunOptions
from agentloop.state.receipts import money, of_task, spent, usd
from agentloop.state.schema import Attempt, State

# How often a lane waiting for room looks whether the run winds down meanwhile.
POLL_SECONDS = 0.5

# A reservation nobody can put a number on yet: no task of the plan has finished.
Reservation = float | None


class Verdict(str, Enum):
    """What the budget says to a task about to start."""

    GO = "go"        # start it
    WAIT = "wait"    # the running tasks may still reach the budget: wait for one to finish
    STOP = "stop"    # the budget is spent: no task starts any more


def verdict(budget: float | None, spent: float, running: Iterable[Reservation]) -> Verdict:
    """Whether a task may start when `spent` is spent and tasks with these reservations run."""
    if budget is None:
        return Verdict.GO
    if spent >= budget:
        return Verdict.STOP
    held = list(running)
    if not held:
        return Verdict.GO  # alone, as a sequential run starts it
    if any(r is None for r in held) or spent + sum(r or 0.0 for r in held) >= budget:
        return Verdict.WAIT
    return Verdict.GO


def runs_per_attempt(options: RunOptions, checked: bool) -> int:
    """The most agent runs one attempt makes: the developer's runs (one per iteration), a fix
    run per round of failing checks after each (`checked`: the task has checks), and per review
    round the reviewer and a fix (itself held to the checks)."""
    fixes = options.check_rounds if checked else 0
    runs = options.iterations * (1 + fixes)
    if options.review:
        runs += options.max_review_rounds * (2 + fixes)
    return runs


def cap_of(options: RunOptions, caps_spend: bool, checked: bool) -> float | None:
    """The most one attempt can spend when the agent holds each run to --task-budget; None
    where nothing caps it."""
    if not caps_spend or options.task_budget is None:
        return None
    return options.task_budget * runs_per_attempt(options, checked)


def costliest(state: State) -> float | None:
    """The most a task of this plan has cost so far (all its runs, helpers included), counting
    tasks with at least one finished agent run of known cost; None before the first such run.
    A task whose only runs were stopped before they reported (Ctrl+C) is no figure: its 0.0
    would let every lane start at once."""
    costs = [of_task(t).cost_usd for t in state.tasks
             if any(a.finished_at is not None and a.cost_known for a in t.history)]
    return max(costs) if costs else None


@dataclass(frozen=True)  # made at first use (agentloop.ondemand): most runs never make one
class Reckoning:
    """What the budget counts as spent: the known cost, and the runs of unknown cost each
    counted as `each` (None: no run's cost is known yet, so they count nothing)."""

    known: float
    unknown: int = 0
    each: float | None = None
    why: str = ""     # where `each` comes from, in words

    @property
    def total(self) -> float:
        return usd(self.known + self.unknown * (self.each or 0.0))

    def said(self) -> str:
        """What was spent, in words, for the stop line."""
        if not self.unknown or self.each is None:
            return money(self.known)
        runs = "1 agent run" if self.unknown == 1 else f"{self.unknown} agent runs"
        return (f"{money(self.known)}, with {runs} of unknown cost counted as {money(self.each)}"
                f" ({self.why}): {money(self.total)}")


def left_open(state: State) -> tuple[Attempt, ...]:
    """The agent runs an earlier agent-loop left open (killed before its agent reported): read
    when a run begins, before any agent of its own starts."""
    return tuple(a for t in state.tasks for a in t.history
                 if a.finished_at is None and a.exit_code is None)


def reckoned(options: RunOptions, caps_spend: bool, state: State,
             left: Iterable[Attempt] = ()) -> Reckoning:
    """What was spent on this plan as the budget counts it (see the module's word on runs of
    unknown cost); `left`: the runs an earlier agent-loop left open (left_open), each still
    unsettled counted as one of unknown cost."""
    finished = [a for t in state.tasks for a in t.history if a.finished_at is not None]
    finished += [a for a in state.retired if a.finished_at is not None]
    unknown = sum(1 for a in finished if not a.cost_known)
    unknown += sum(1 for a in left if a.finished_at is None)
    if not unknown:
        return Reckoning(spent(state))
    if caps_spend and options.task_budget is not None:
        return Reckoning(spent(state), unknown, options.task_budget, "--task-budget")
    known = [a.cost_usd for a in finished if a.cost_known]
    each = max(known) if known else None
    return Reckoning(spent(state), unknown, each, "the costliest run of known cost")


def reservation(options: RunOptions, caps_spend: bool, checked: bool,
                state: State) -> Reservation:
    """What a task starting now may spend before it ends, as far as can be told."""
    cap = cap_of(options, caps_spend, checked)
    return cap if cap is not None else costliest(state)


def cap_too_low(options: RunOptions, state: State) -> str:
    """A warning when --task-budget is below what one agent run of this plan has already cost:
    such a run is cut short, paid for, and paid again by its retry; "" otherwise."""
    cap = options.task_budget
    runs = [a.cost_usd for t in state.tasks for a in t.history if a.finished_at is not None]
    if cap is None or not runs or max(runs) <= cap:
        return ""
    return (f"--task-budget {money(cap)} is below what one agent run of this plan has cost "
            f"({money(max(runs))}): a run cut short by it is paid for, and again by its retry")


def restated(reached: BudgetReached, now: Reckoning) -> BudgetReached:
    """The stop as it stands once every lane has ended: the tasks that were running when the
    budget was reached finished and were paid for, so the line says what was really spent
    (with what the helper model cost after it: the task that crossed it has its commit
    message written, which is not a task still running)."""
    total = now.total
    if total <= reached.spent:
        return reached
    return BudgetReached(f"budget reached: spent {now.said()} of {money(reached.budget)} "
                         f"({money(total - reached.spent)} of it after that, by the work still "
                         "under way: the tasks then running and their helper runs, such as a "
                         "commit message)", total, reached.budget)


def suggestion(spent: float, budget: float) -> float:
    """A --budget that lets a stopped run go on: room for as much again as this one had, in
    the four decimals a budget is said in (agentloop.state.tally.money: a budget of a fraction
    of a cent gets as much again, not a whole cent), and always above what was spent (a
    suggestion that stops at once is none; a budget of 0 gets a cent)."""
    room = budget if budget >= 0.0001 else 0.01
    # Rounded first: 0.0024 + 0.002 is 43.99999… ten-thousandths, not 44 and a bit.
    return math.ceil(round((spent + room) * 10000, 6)) / 10000


def bound(options: RunOptions, caps_spend: bool, checked: bool) -> str:
    """How far --budget may be passed, in words, for --dry-run."""
    cap = cap_of(options, caps_spend, checked)
    if cap is not None:
        return (f"no task starts once it is spent or while the running tasks' caps could reach "
                f"it, so it is passed by at most {money(cap)}, one attempt's cap (--task-budget "
                f"for each of its {runs_per_attempt(options, checked)} agent run(s) at most)")
    lanes = options.parallel
    beside = "" if lanes == 1 else (
        f"; with --parallel {lanes}, a task starts beside others only while what was spent plus "
        "the costliest task so far for each running one stays under it (one at a time until a "
        "task has finished), so it is passed by at most one task's cost plus, for each other "
        f"lane (up to {lanes - 1}), what its task costs beyond the costliest before it")
    uncapped = (" (this agent cannot hold a run to --task-budget)"
                if options.task_budget is not None else "")
    return ("no task starts once it is spent; the last task can pass it by its own cost, which "
            f"nothing caps{uncapped}{beside}")


class Purse:
    """The reservations of the attempts running now, one per lane (a lane runs one at a time),
    guarded by the run's shared lock; a lane gives its own back when its attempt ends."""

    def __init__(self, lock: threading.RLock) -> None:
        self._room = threading.Condition(lock)
        self._held: dict[str, Reservation] = {}
        # The runs an earlier agent-loop left open, read as this run began (left_open).
        self.left: tuple[Attempt, ...] = ()

    def take(self, lane: str, budget: float | None, spent: Callable[[], float],
             amount: Reservation, halted: Callable[[], bool],
             waits: Callable[[], None] = lambda: None) -> Verdict:
        """Wait while the running attempts may still reach the budget (`waits` is told once);
        GO (reserved), STOP, or WAIT when the run began to wind down meanwhile (start nothing)."""
        told = False
        with self._room:
            self._held.pop(lane, None)
            while True:
                if halted():
                    # Woken by the attempt a Ctrl+C stopped beside it (its reservation given
                    # back), the verdict alone would say GO: the stop comes first.
                    return Verdict.WAIT
                said = verdict(budget, spent(), self._held.values())
                if said is Verdict.GO:
                    self._held[lane] = amount
                if said is not Verdict.WAIT:
                    return said
                if not told:
                    waits()
                    told = True
                self._room.wait(POLL_SECONDS)

    def give_back(self, lane: str) -> None:
        """The lane's attempt ended, its cost recorded: its reservation makes room again."""
        with self._room:
            self._held.pop(lane, None)
            self._room.notify_all()
