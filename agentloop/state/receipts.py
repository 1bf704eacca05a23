"""What the runs cost: tokens, dollars, turns and time, per attempt, task, group and run.

Everything comes from the CLI's own result lines as the state recorded them; a task's cost also
holds its small helper calls (the retry advisor, the commit distiller).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

from agentloop.state.schema import Attempt, State, TaskState

TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
          "cache_creation_input_tokens")


@dataclass(frozen=True)
class Receipt:
    """Totals over some agent runs."""

    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    turns: int = 0
    duration_ms: int = 0
    runs: int = 0
    models: tuple[str, ...] = ()
    cost_known: bool = True   # False: some runs reported no price, so cost_usd is a floor

    def __add__(self, other: "Receipt") -> "Receipt":
        models = tuple(dict.fromkeys(self.models + other.models))
        sums = {k: getattr(self, k) + getattr(other, k) for k in
                ("input_tokens", "output_tokens", "cache_read_input_tokens",
                 "cache_creation_input_tokens", "turns", "duration_ms", "runs")}
        return Receipt(cost_usd=usd(self.cost_usd + other.cost_usd), models=models,
                       cost_known=self.cost_known and other.cost_known, **sums)

    def to_json(self) -> dict[str, Any]:
        """The receipt as --status --json shows it."""
        data = asdict(self)
        data["models"] = list(self.models)
        return data

    def line(self) -> str:
        """One line for people."""
        return (f"{money(self.cost_usd, self.cost_known)} · tokens in {self.input_tokens:,} out "
                f"{self.output_tokens:,} cache read {self.cache_read_input_tokens:,} write "
                f"{self.cache_creation_input_tokens:,} · {self.turns} turns · "
                f"{self.duration_ms / 1000:.1f}s" + (f" · {', '.join(self.models)}"
                                                      if self.models else ""))


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
    tasks' and the runs of tasks it no longer has (reworded, removed)."""
    return usd(sum(t.cost_usd for t in state.tasks)
               + sum(a.cost_usd + a.helper_cost_usd for a in state.retired))


def of_task(task: TaskState) -> Receipt:
    """Every run of one task, its helper calls' cost included."""
    return of_runs(task.history)


# What a receipt adds up, besides dollars and models (in the order of Receipt's fields).
_SUMMED = ("input_tokens", "output_tokens", "cache_read_input_tokens",
           "cache_creation_input_tokens", "turns", "duration_ms", "runs")


class _Tally:
    """A receipt being added up, in place: --status of a plan of hundreds of tasks adds up
    thousands of runs, and a frozen Receipt per step was most of its time. The dollars are
    rounded after each step, as `Receipt.__add__` rounds them."""

    # A tally is made per task and per group of every --status: slots make it and its
    # attributes cheaper to reach.
    __slots__ = ("cost", "known", "models", "sums")

    def __init__(self) -> None:
        self.cost, self.known = 0.0, True
        self.models: dict[str, None] = {}
        self.sums = dict.fromkeys(_SUMMED, 0)

    def runs(self, runs: Iterable[Attempt]) -> _Tally:
        """Add these agent runs, their helper calls' cost included."""
        # Kept in locals over the loop (a plan's every run passes here), written back after:
        # the same sums, rounded at the same steps.
        sums, cost, known = self.sums, self.cost, self.known
        for a in runs:
            cost = usd(cost + usd(a.cost_usd + a.helper_cost_usd))
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

    def add(self, other: _Tally) -> None:
        """Add another tally, as `+` adds two receipts."""
        self.cost = usd(self.cost + other.cost)
        self.known = self.known and other.known
        sums = self.sums
        for k, n in other.sums.items():
            sums[k] += n
        if other.models:
            self.models.update(other.models)

    def receipt(self) -> Receipt:
        """What was added up."""
        return Receipt(cost_usd=self.cost, models=tuple(self.models), cost_known=self.known,
                       **self.sums)


def of_runs(runs: Iterable[Attempt]) -> Receipt:
    """The sum over these agent runs, their helper calls' cost included."""
    return _Tally().runs(runs).receipt()


def total(tasks: Iterable[TaskState]) -> Receipt:
    """The sum over tasks."""
    whole = _Tally()
    for task in tasks:
        whole.add(_Tally().runs(task.history))
    return whole.receipt()


def of_state(state: State) -> Receipt:
    """Every run of this plan since its last --reset, the retired tasks' included."""
    return total(state.tasks) + of_runs(state.retired)


def tallied(state: State) -> tuple[Receipt, dict[str, Receipt]]:
    """of_state, and the totals per group (in the order the groups appear), each task's runs
    added up once (--status shows both)."""
    whole, groups = _Tally(), dict[str, _Tally]()
    for task in state.tasks:
        each = _Tally().runs(task.history)
        whole.add(each)
        group = groups.get(task.group)
        if group is None:
            group = groups[task.group] = _Tally()
        group.add(each)
    whole.add(_Tally().runs(state.retired))
    return whole.receipt(), {name: group.receipt() for name, group in groups.items()}
