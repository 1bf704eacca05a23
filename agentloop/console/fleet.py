"""What `--integrate` prints: each group's outcome, what to do about the ones left out, and the
total cost of every job against the plan's budget (text, or JSON with --json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from agentloop import app
from agentloop.console.live import Console
from agentloop.console.render import SCHEMA
from agentloop.errors import UNFINISHED_EXIT
from agentloop.files.shown import typed_path
from agentloop.fleet.integrate import Integrated
from agentloop.options.record import RunOptions
from agentloop.state.receipts import money


def integrate(tasks_md: Path, cwd: Path, options: RunOptions,
              show: Callable[[str | dict[str, Any]], None]) -> int:
    """--integrate: run it, show what it did; the exit code."""
    done = app.integrate(tasks_md, cwd, options, Console(cwd=cwd))
    show(integrate_json(done) if options.as_json else integrate_text(done))
    return exit_code(done)


def integrate_text(result: Integrated) -> str:
    """The lines an integration ends with."""
    lines = [f"integrated {result.project.task_file_name} onto {result.onto}:"]
    for g in result.groups:
        head = f"group {g.number} ({g.name})"
        if g.outcome == "landed":
            told = f"{g.landed} task(s) landed" + (f", {g.already} already there"
                                                   if g.already else "")
            lines.append(f"  {head}: {told}")
        elif g.outcome == "not run":
            lines.append(f"  {head}: not run yet (no {g.branch} on the remote)")
        elif g.outcome == "never ran":
            lines.append(f"  {head}: never ran ({g.detail}): run its job (`agent-loop "
                         f"{typed_path(result.project.task_file_name)} --group {g.number} "
                         f"--push {result.remote}`)")
        else:
            lines.append(f"  {head}: {g.outcome}: {g.detail}")
    cost = money(result.cost_usd, result.cost_known)
    if result.budget is not None:
        over = " (over it)" if result.cost_usd > result.budget else ""
        lines.append(f"total cost of the groups' jobs and this integration: {cost} of the "
                     f"plan's budget {money(result.budget)}{over}")
    else:
        lines.append(f"total cost of the groups' jobs and this integration: {cost}")
    plan = typed_path(result.project.task_file_name)
    lines.append(f"nothing was pushed; `agent-loop {plan} --status` shows every task")
    return "\n".join(lines)


def integrate_json(result: Integrated) -> dict[str, Any]:
    """--integrate --json."""
    return {"schema": SCHEMA, "task_file": result.project.task_file_name, "onto": result.onto,
            "groups": [{"number": g.number, "name": g.name, "branch": g.branch,
                        "outcome": g.outcome, "landed": g.landed, "already": g.already,
                        "detail": g.detail} for g in result.groups],
            "cost_usd": result.cost_usd, "cost_known": result.cost_known,
            "budget": result.budget}


def exit_code(result: Integrated) -> int:
    """4 when some group's work is not on the main line for a reason a person must see."""
    return UNFINISHED_EXIT if result.unfinished else 0
