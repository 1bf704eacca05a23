"""What the runs cost: tokens, dollars, turns and time, per attempt, task, group and run.

Everything comes from the CLI's own result lines as the state recorded them; a task's cost also
holds its small helper calls (the retry advisor, the commit distiller). The sums themselves are
added up by agentloop.state.tally, which `--status` reads without this module's record.
"""

from __future__ import annotations

from typing import Any, Iterable

from agentloop.ondemand import dataclass
from agentloop.state import tally
from agentloop.state.schema import Attempt, State, TaskState
from agentloop.state.tally import SUMMED, TOKENS, money, spent, usd

__all__ = ["TOKENS", "Receipt", "money", "of_runs", "of_state", "of_task", "spent", "total",
           "usd"]


@dataclass(frozen=True)  # made when first used (agentloop.ondemand): after an agent ran
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
        sums = {k: getattr(self, k) + getattr(other, k) for k in SUMMED}
        return Receipt(cost_usd=usd(self.cost_usd + other.cost_usd), models=models,
                       cost_known=self.cost_known and other.cost_known, **sums)

    def to_json(self) -> dict[str, Any]:
        """The receipt as --status --json shows it."""
        return tally.as_json(self.cost_usd, self.cost_known, self._sums(), self.models)

    def line(self) -> str:
        """One line for people."""
        return tally.line(self.cost_usd, self.cost_known, self._sums(), self.models)

    def _sums(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in SUMMED}


def of_task(task: TaskState) -> Receipt:
    """Every run of one task, its helper calls' cost included."""
    return of_runs(task.history)


def of_runs(runs: Iterable[Attempt]) -> Receipt:
    """The sum over these agent runs, their helper calls' cost included."""
    return _receipt(tally.of_runs(runs))


def total(tasks: Iterable[TaskState]) -> Receipt:
    """The sum over tasks."""
    return _receipt(tally.of_tasks(tasks))


def of_state(state: State) -> Receipt:
    """Every run of this plan since its last --reset, the retired tasks' included."""
    return _receipt(tally.of_state(state))


def _receipt(sums: tally.Tally) -> Receipt:
    return Receipt(cost_usd=sums.cost, models=tuple(sums.models), cost_known=sums.known,
                   **sums.sums)
