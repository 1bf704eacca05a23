"""What the dashboard shows, read from `.agent-loop/`: every plan's state as a short view, and
the newest run's events as they were written (earlier versions' lines included: an event is
passed on as its JSON object, fields this version does not know kept)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agentloop.errors import StateError
from agentloop.state import receipts
from agentloop.state.project import plan_stores
from agentloop.state.schema import State, TaskState
from agentloop.state.store import DIRNAME, Store


@dataclass(frozen=True)
class Plan:
    """One plan of the repository: its key in URLs (its folder under `.agent-loop/`) and store."""

    key: str
    store: Store


def plans(root: Path) -> list[Plan]:
    """Every plan that has saved a state under `root`, the first plan's folder keyed "."."""
    _, stores = plan_stores(root)
    return [Plan(_key(s), s) for s in stores]


def plan_at(root: Path, key: str) -> Plan | None:
    """The plan a request names by its key; None for a key that is no plan's (nothing else of
    the disk is ever looked at for a request)."""
    return next((p for p in plans(root) if p.key == key), None)


def _key(store: Store) -> str:
    return store.dir.relative_to(store.base).as_posix()


def plan_view(plan: Plan) -> dict[str, Any]:
    """The plan's state as the page shows it: its tasks and totals; `error` when unreadable."""
    try:
        state = plan.store.load()
    except StateError as exc:
        return {"key": plan.key, "error": str(exc), "tasks": []}
    if state is None:
        return {"key": plan.key, "error": "no state yet", "tasks": []}
    return state_view(plan.key, state)


def state_view(key: str, state: State) -> dict[str, Any]:
    """A state in short: what each task's row, and the totals line, need."""
    total = receipts.of_state(state)
    budget = state.remembered.get("budget")
    return {"key": key, "task_file": state.task_file, "title": state.title or "",
            "vcs": state.vcs or "", "agent": state.agent or "", "updated_at": state.updated_at,
            "cost_usd": total.cost_usd, "cost_known": total.cost_known,
            "budget": budget if isinstance(budget, (int, float)) else None,
            "depends": state.depends, "tasks": [_task(t) for t in state.tasks]}


def _task(task: TaskState) -> dict[str, Any]:
    return {"index": task.index, "group": task.group, "summary": task.summary,
            "status": task.status, "attempts": task.attempts, "cost_usd": task.cost_usd,
            "started_at": task.started_at, "finished_at": task.finished_at,
            "change_id": task.change_id, "files": task.files, "error": task.error,
            "logs": [a.log for a in task.history if a.log]}


def newest_run(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The events of the newest run in `path` (from its last RunStarted), and the offset read up
    to: a line still being written is left for the next read."""
    try:
        data = path.read_bytes()
    except OSError:
        return [], 0
    end = data.rfind(b"\n") + 1
    start = data.rfind(b'"type":"RunStarted"', 0, end)
    start = data.rfind(b"\n", 0, start) + 1 if start >= 0 else 0
    return events_in(data[start:end]), end


def events_in(chunk: bytes) -> list[dict[str, Any]]:
    """The events in whole lines of events.jsonl; a damaged line (a crash cut it) is skipped."""
    out = []
    for line in chunk.splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            out.append(event)
    return out


def inside(base: Path, relative: str) -> Path | None:
    """`relative` (as the state records a log: from the root) when it resolves inside `base`
    (the repository's `.agent-loop/`), links followed; None otherwise."""
    root = base.parent
    try:
        path = (root / relative).resolve()
        path.relative_to(base.resolve())
    except (ValueError, OSError):
        return None
    return path


__all__ = ["DIRNAME", "Plan", "events_in", "inside", "newest_run", "plan_at", "plan_view",
           "plans", "state_view"]
