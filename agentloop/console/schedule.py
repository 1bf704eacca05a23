"""What --status and --dry-run say about groups running side by side (--parallel): the groups
at work, what a waiting group still waits for, and which groups can start at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloop.state.schema import State

if TYPE_CHECKING:
    from agentloop.app import PlanView


def lane_lines(state: State) -> list[str]:
    """Which groups work now (a parallel run), and what each group that waits waits for."""
    working = list(dict.fromkeys(t.group for t in state.tasks if t.status == "running"))
    lines = [f"working: {', '.join(working)}"] if len(working) > 1 else []
    for group, needs in state.depends.items():
        left = [g for g in needs if any(t.group == g and t.status not in ("completed", "skipped")
                                        for t in state.tasks)]
        if left and group not in working:
            lines.append(f"waiting: {group} waits for {', '.join(left)}")
    return lines


def schedule_lines(view: PlanView) -> list[str]:
    """Which groups can start at once (--parallel), and what each waits for."""
    if view.parallel < 2 and not any(w for _, _, w in view.schedule):
        return []
    lines = [f"schedule (--parallel {view.parallel}): groups of one wave can run at once"]
    for n, group, waits in view.schedule:
        after = f" (waits for {', '.join(waits)})" if waits else ""
        lines.append(f"  wave {n}: {group}{after}")
    return lines
