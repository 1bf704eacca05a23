"""What the runs cost: tokens, dollars, turns and time, per attempt, task, group and run.

Everything comes from the CLI's own result lines as the state recorded them; a task's cost also
holds its small helper calls (the retry advisor, the commit distiller).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

from agentloop.state import State, TaskState

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

    def __add__(self, other: "Receipt") -> "Receipt":
        models = tuple(dict.fromkeys(self.models + other.models))
        sums = {k: getattr(self, k) + getattr(other, k) for k in
                ("input_tokens", "output_tokens", "cache_read_input_tokens",
                 "cache_creation_input_tokens", "turns", "duration_ms", "runs")}
        return Receipt(cost_usd=round(self.cost_usd + other.cost_usd, 6), models=models, **sums)

    def to_json(self) -> dict[str, Any]:
        """The receipt as --status --json shows it."""
        data = asdict(self)
        data["models"] = list(self.models)
        return data

    def line(self) -> str:
        """One line for people."""
        return (f"${self.cost_usd:.4f} · tokens in {self.input_tokens:,} out "
                f"{self.output_tokens:,} cache read {self.cache_read_input_tokens:,} write "
                f"{self.cache_creation_input_tokens:,} · {self.turns} turns · "
                f"{self.duration_ms / 1000:.1f}s" + (f" · {', '.join(self.models)}"
                                                      if self.models else ""))


def of_task(task: TaskState) -> Receipt:
    """Every run of one task, its helper calls' cost included."""
    total = Receipt()
    for a in task.history:
        total += Receipt(cost_usd=round(a.cost_usd + a.helper_cost_usd, 6),
                         turns=a.num_turns or 0, duration_ms=a.duration_ms or 0,
                         runs=1 if a.exit_code is not None else 0,
                         models=(a.model,) if a.model else (),
                         **{k: int(a.usage.get(k, 0)) for k in TOKENS})
    return total


def total(tasks: Iterable[TaskState]) -> Receipt:
    """The sum over tasks."""
    out = Receipt()
    for task in tasks:
        out += of_task(task)
    return out


def by_group(state: State) -> dict[str, Receipt]:
    """Totals per group, in the order the groups appear."""
    groups: dict[str, Receipt] = {}
    for task in state.tasks:
        groups[task.group] = groups.get(task.group, Receipt()) + of_task(task)
    return groups
