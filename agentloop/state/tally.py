"""What runs cost, added up in place: the sums behind every receipt (agentloop.state.receipts),
and what `--status` prints of them, which makes no receipt record (that module's class would
bring the dataclasses module into `--status`, and costs more than the sums themselves).
"""

from __future__ import annotations

TYPE_CHECKING = False   # typing for the checker only: --status imports this module, not typing
if TYPE_CHECKING:
    from typing import Any, Iterable

    from agentloop.state.schema import Attempt, State, TaskState

TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
          "cache_creation_input_tokens")
# What a receipt adds up, besides dollars and models (in the order of Receipt's fields).
SUMMED = ("input_tokens", "output_tokens", "cache_read_input_tokens",
          "cache_creation_input_tokens", "turns", "duration_ms", "runs")


def usd(amount: float) -> float:
    """Dollars as the state keeps them: rounded to a millionth, so sums do not drift."""
    return round(amount, 6)


def money(amount: float, known: bool = True) -> str:
    """Dollars as the user reads them, everywhere: four decimals ($0.0123); a cost the agent
    did not report is said to be unknown, and a sum with such a cost in it a floor."""
    if known:
        return f"${amount:.4f}"
    # Runs stopped before their agent reported a total, or priced by nobody, count nothing.
    return f"${amount:.4f} or more (not every run's cost is known)" if amount else \
        "unknown (tokens only)"


def spent(state: State) -> float:
    """Everything spent on this plan since its last --reset, helper calls included: its
    tasks' and the runs of tasks it no longer has (reworded, removed), what --budget holds it
    to. The runs of another plan whose state it took over (renamed over that plan) count in
    its totals (of_state), not here: they were not spent on this plan."""
    return usd(sum(t.cost_usd for t in state.tasks)
               + sum(a.cost_usd + a.helper_cost_usd for a in state.retired
                     if a.other_plan is None))


def _plus(total: float, more: float) -> float:
    """usd(total + more) of two amounts usd already rounded (`total` a sum, never -0.0)."""
    # With either one nothing, the other is the sum as it is, rounded already (rounding twice
    # rounds once): the decimal rounding is the costliest step of --status's receipts.
    if not more:
        return total
    if not total:
        return more
    return usd(total + more)


def reported(cost: float, known: bool, sums: dict[str, int]) -> bool:
    """Whether any run reported a cost: known, or some dollars or tokens."""
    return known or bool(cost) or any(sums[k] for k in TOKENS)


def words(cost: float, known: bool, sums: dict[str, int]) -> str:
    """A cost as people read it (money); where agents ran and none reported anything (each
    stopped first), "unknown (no agent reported)", as the run's closing line says it:
    "unknown (tokens only)" with no tokens read as tokens counted."""
    return money(cost, known) if reported(cost, known, sums) else "unknown (no agent reported)"


def agents_ran(state: State, unstarted: frozenset[str] = frozenset()) -> bool:
    """Whether any agent ran for this plan (a run its totals count), but those in `unstarted`
    (by their logs: a stop ended them before their agent said a word): with none, nothing is
    said of cost, as in the run's closing line."""
    return any(a.log not in unstarted for t in state.tasks for a in t.history) \
        or any(a.log not in unstarted for a in state.retired)


def line(cost: float, known: bool, sums: dict[str, int], models: tuple[str, ...]) -> str:
    """A receipt in one line for people."""
    return (f"{words(cost, known, sums)} · tokens in {sums['input_tokens']:,} out "
            f"{sums['output_tokens']:,} cache read {sums['cache_read_input_tokens']:,} write "
            f"{sums['cache_creation_input_tokens']:,} · {sums['turns']} turns · "
            f"{sums['duration_ms'] / 1000:.1f}s" + (f" · {', '.join(models)}" if models else ""))


def as_json(cost: float, known: bool, sums: dict[str, int], models: tuple[str, ...],
            ) -> dict[str, Any]:
    """A receipt as --status --json shows it (its fields in Receipt's order)."""
    return {"cost_usd": cost, **sums, "models": list(models), "cost_known": known}


class Tally:
    """A receipt being added up, in place: --status of a plan of hundreds of tasks adds up
    thousands of runs, and a frozen Receipt per step was most of its time. The dollars are
    rounded after each step, as `Receipt.__add__` rounds them."""

    # A tally is made per task and per group of every --status: slots make it and its
    # attributes cheaper to reach.
    __slots__ = ("cost", "known", "models", "sums")

    def __init__(self) -> None:
        self.cost, self.known = 0.0, True
        self.models: dict[str, None] = {}
        self.sums = dict.fromkeys(SUMMED, 0)

    def runs(self, runs: Iterable[Attempt]) -> Tally:
        """Add these agent runs, their helper calls' cost included."""
        # Kept in locals over the loop (a plan's every run passes here), written back after:
        # the same sums, rounded at the same steps.
        sums, cost, known = self.sums, self.cost, self.known
        for a in runs:
            cost = _plus(cost, usd(a.cost_usd + a.helper_cost_usd))
            known = known and a.cost_known
            sums["turns"] += a.num_turns or 0
            sums["duration_ms"] += a.duration_ms or 0
            sums["runs"] += 1 if a.exit_code is not None else 0
            usage = a.usage
            if usage:  # no tokens reported: every sum stays as it is
                for k in TOKENS:
                    sums[k] += int(usage.get(k, 0))
            if a.model:
                self.models[a.model] = None
        self.cost, self.known = cost, known
        return self

    def add(self, other: Tally) -> Tally:
        """Add another tally, as `+` adds two receipts."""
        self.cost = _plus(self.cost, other.cost)
        self.known = self.known and other.known
        sums = self.sums
        for k, n in other.sums.items():
            sums[k] += n
        if other.models:
            self.models.update(other.models)
        return self

    def words(self) -> str:
        """The cost as people read it (the function `words`)."""
        return words(self.cost, self.known, self.sums)

    def line(self) -> str:
        """The sums in one line for people, as Receipt.line says them."""
        return line(self.cost, self.known, self.sums, tuple(self.models))

    def to_json(self) -> dict[str, Any]:
        """The sums as --status --json shows them, as Receipt.to_json does."""
        return as_json(self.cost, self.known, self.sums, tuple(self.models))


def of_runs(runs: Iterable[Attempt]) -> Tally:
    """The sums over these agent runs, their helper calls' cost included."""
    return Tally().runs(runs)


def of_tasks(tasks: Iterable[TaskState]) -> Tally:
    """The sums over tasks."""
    whole = Tally()
    for task in tasks:
        whole.add(Tally().runs(task.history))
    return whole


def of_state(state: State) -> Tally:
    """Every run of this plan since its last --reset, the retired tasks' included."""
    return of_tasks(state.tasks).add(of_runs(state.retired))


def tallied(state: State) -> tuple[Tally, dict[str, Tally]]:
    """of_state, and the sums per group (in the order the groups appear), each task's runs
    added up once (--status shows both)."""
    whole, groups = Tally(), dict[str, Tally]()
    for task in state.tasks:
        each = Tally().runs(task.history)
        whole.add(each)
        group = groups.get(task.group)
        if group is None:
            group = groups[task.group] = Tally()
        group.add(each)
    whole.add(Tally().runs(state.retired))
    return whole, groups
