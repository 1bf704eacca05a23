"""--dry-run as the user reads it: every task as it would run, each group with its number (what
`--group N` means) and what it waits for, what the plan holds besides tasks; and the same as
JSON, with the stages a CI matrix needs."""

from __future__ import annotations

from typing import Any

from agentloop.app import PlanView
from agentloop.console.render import SCHEMA
from agentloop.plan import groups
from agentloop.run.selection import PlanRow

RULES = ("rules: `## Heading` starts a group; in a file with checkboxes only checkbox "
         "items are tasks (plain bullets are notes); otherwise every top-level item is; a "
         "`### Task N: …` section is one task with everything under it; `1.1` items fold into the "
         "`1.` above them; a legend (`- [P] tasks = …`) is a note; `[x]` is done, `[ ]*` "
         "optional; `agent-loop-checks` blocks are checks; docs/reference/task-file.md has the "
         "rest.")


def plan_text(view: PlanView) -> str:
    """--dry-run as lines: each group's number (what --group takes) above its tasks."""
    rows = view.rows
    total = len(rows)
    lines = [f"dry run: {view.project.task_file_name}, {total} task(s), "
             f"{sum(r.runs for r in rows)} to run; nothing will run or be written"]
    if view.context:
        lines.append(f"context: every fresh session gets the plan's preamble "
                     f"({len(view.context)} characters)")
    numbers = group_numbers(rows)
    for r in rows:
        if r.index == 1 or rows[r.index - 2].group != r.group:
            lines.append(f"group {numbers[r.group]}: {r.group}")
        how = r.how if r.runs else f"not run: {r.how}"
        lines.append(f"[{r.index}/{total}] {r.group} > {r.summary}  ({how})")
        if r.runs and r.checks:
            lines.append("    checks: " + ", ".join(r.checks))
    for line, text, into in view.folded:
        lines.append(f"folded: line {line}: {text} (numbered under the task on line {into}: "
                     "part of that task)")
    lines += schedule_lines(view)
    lines += list(view.sandbox)
    lines += [view.budget] if view.budget else []
    for line, text, why in view.ignored:
        lines.append(f"ignored: line {line}: {text} ({why})")
    lines += [f"warning: {w}" for w in view.warnings]
    if not view.ran:  # the format's reminder, for a plan not run yet: once is enough
        lines.append(RULES)
    return "\n".join(lines)


def group_numbers(rows: tuple[PlanRow, ...]) -> dict[str, int]:
    """Each group's number, as --group takes it (agentloop.plan.groups)."""
    return {name: n for n, name in enumerate(groups.in_order([r.group for r in rows]), 1)}


def plan_json(view: PlanView) -> dict[str, Any]:
    """--dry-run --json: the plan for scripts."""
    numbers = group_numbers(view.rows)
    return {"schema": SCHEMA, "task_file": view.project.task_file_name,
            "context": view.context,
            "groups": [{"number": n, "name": name} for name, n in numbers.items()],
            "tasks": [{"index": r.index, "group": r.group, "group_number": numbers[r.group],
                       "summary": r.summary, "text": r.text, "status": r.status,
                       "runs": r.runs, "checks": list(r.checks),
                       ("how" if r.runs else "why_not"): r.how} for r in view.rows],
            "ignored": [{"line": line, "text": text, "why": why}
                        for line, text, why in view.ignored],
            "folded": [{"line": line, "text": text, "into_line": into}
                       for line, text, into in view.folded],
            "warnings": list(view.warnings), "parallel": view.parallel,
            "sandbox": list(view.sandbox),
            "budget": view.budget or None,
            "schedule": [{"wave": n, "group": g, "waits_for": list(w)}
                         for n, g, w in view.schedule],
            "stages": stages(view.schedule, numbers)}


def stages(schedule: tuple[tuple[int, str, tuple[str, ...]], ...],
           numbers: dict[str, int]) -> list[list[int]]:
    """The waves as a CI matrix takes them: each stage's group numbers (what --group takes),
    stage by stage; a stage's groups run at once, after every earlier stage is integrated."""
    out: list[list[int]] = []
    for wave, group, _ in schedule:
        while len(out) < wave:
            out.append([])
        out[wave - 1].append(numbers[group])
    return out


def schedule_lines(view: PlanView) -> list[str]:
    """Which groups can start at once (--parallel), and what each waits for."""
    if view.parallel < 2 and not any(w for _, _, w in view.schedule):
        return []
    lines = [f"schedule (--parallel {view.parallel}): groups of one wave can run at once"]
    for n, group, waits in view.schedule:
        after = f" (waits for {', '.join(waits)})" if waits else ""
        lines.append(f"  wave {n}: {group}{after}")
    return lines
