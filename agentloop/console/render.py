"""Text and JSON for --status (of one plan, or of every plan of a repository), and the helpers
every rendering shares: the JSON documents' schema version, paths as the user can type them,
durations.

Two renderings of the same data; paths are shown so that they work from where the user stands.
A run's closing lines are agentloop.console.closing.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from agentloop.files.shown import typed, typed_path
from agentloop.state import tally
from agentloop.state.status import TaskStatus as S
from agentloop.state.tally import money
from agentloop.vcs import STATE_DIR

# For the types only: --status imports none of the run's modules, nor typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from agentloop.standing import PlanLine, StatusView
    from agentloop.state.schema import State, TaskState

# The version of every JSON document agent-loop prints (--status, --dry-run, errors): a
# consumer checks it; it goes up when a field changes meaning or goes away, not when one is added.
SCHEMA = 1


def shown(path: str | Path, root: Path, cwd: Path) -> str:
    """A path kept relative to the project root, as the user can type it from `cwd`."""
    full = root / path
    try:
        return os.path.relpath(full, cwd)
    except ValueError:
        return str(full)


def _shower(root: Path, cwd: Path) -> Callable[[str | Path], str]:
    """`shown` for many paths of one root: from the root itself (the usual place to stand), a
    relative path only needs normalising; os.path.relpath for every task of a long plan was a
    good part of --status's time."""
    if shown(".", root, cwd) != ".":
        return lambda path: shown(path, root, cwd)
    return lambda path: _normal(str(path)) if not os.path.isabs(path) else \
        shown(path, root, cwd)


def _normal(path: str) -> str:
    """os.path.normpath of a relative path, which a path the state records already is (no
    empty, `.` or `..` part) and is said as it is: normpath is Python code, run per task."""
    wrapped = f"/{path}/"
    if path and "//" not in wrapped and "/./" not in wrapped and "/../" not in wrapped:
        return path
    return os.path.normpath(path)


def duration(seconds: float) -> str:
    """12s, 3m05s, 1h02m."""
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def status_text(view: StatusView, cwd: Path) -> str:
    """--status: counts by status, then one line per task, then receipts."""
    state = view.state
    total, groups = tally.tallied(state)
    show = _shower(view.root, cwd)
    lines = [view.note] if view.note else []
    lines.append(_plan_line(view, total))
    lines += _budget_lines(state)
    lines += [_task_line(t, view, show) for t in state.tasks]
    lines += lane_lines(state)
    lines += _history_lines(view, show)
    lines += _receipt_lines(state, groups, total)
    return "\n".join(lines)


def _plan_line(view: StatusView, total: tally.Tally) -> str:
    """The plan's one line: its tasks counted by status, what they cost, the vcs and agent."""
    state = view.state
    counts = dict(Counter(str(t.status) for t in state.tasks))
    return (f"{state.task_file}: {len(state.tasks)} task(s): "
            + ", ".join(f"{n} {s}" for s, n in counts.items())
            # Where no agent ran, nothing to tell of (as the run's closing line).
            + (f"; cost {total.words()}" if tally.agents_ran(state, view.unstarted) else "")
            + f"; vcs {state.vcs or '-'}"
            + f"; agent {state.agent or '-'}")


def _budget_lines(state: State) -> list[str]:
    """The budget set for the plan, if one is, and what was spent against it."""
    budget = state.remembered.get("budget")
    if budget is None:
        return []
    return [f"budget: {money(budget)}, the most this plan may cost since its last "
            f"--reset; {money(tally.spent(state))} spent"]


def _task_line(t: TaskState, view: StatusView, show: Callable[[str | Path], str]) -> str:
    """One task: status, runs, change and cost, then what a user may need of it on lines
    below (its log, its error or note, what it waits for, the reviewer's feedback, checks)."""
    change = (t.change_id or ("(empty)" if _empty(t) else "-"))[:12]
    # Only runs that started an agent: one a stop ended before it said a word is none.
    runs = sum(1 for a in t.history if a.role == "developer" and a.iteration == 1
               and a.log not in view.unstarted)
    return (f"{t.index:>4} {t.status:<11} {runs} run(s)  {change:<12} "
            f"{_task_cost(t):>9}  {t.group} > {t.summary}"
            + (f"\n       log: {show(t.log)}" if t.log else "")
            + (f"\n       error: {t.error}" if t.error and t.status != S.COMPLETED else "")
            # A completed task's note: where the files it wrote inside a submodule
            # are kept (agentloop.run.submodule_files), or `(empty)` reads as idle.
            + (f"\n       note: {t.error}" if t.error and t.status == S.COMPLETED else "")
            + (f"\n       waiting: {t.waiting}" if t.waiting else "")
            + ("\n       feedback: " + t.feedback.replace("\n", "\n         ")
               if t.feedback and t.status == S.UNAPPROVED else "")
            + _checks_line(t))


def _history_lines(view: StatusView, show: Callable[[str | Path], str]) -> list[str]:
    """What the history says apart from the state: the tasks landed on a branch your checkout
    left, changes lost, reworded, moved or reverted, each with what to run about it (the plan
    named as you can type it where you stand: the state's name is from the root)."""
    state, lines = view.state, []

    def plan() -> str:
        return typed_path(show(state.task_file))
    if view.elsewhere:
        branch, yours = view.elsewhere
        branch = branch.removeprefix("refs/heads/")
        on = f"on {yours.removeprefix('refs/heads/')}" if yours else "on a detached HEAD"
        lines.append(f"the tasks landed on branch {branch}, where their changes are; your "
                     f"checkout is {on} now (`git switch {typed(branch)}` goes back to "
                     "them)")
    for index in view.lost:
        if state.agent == "rehearse":
            lines.append(f"task {index}'s change is no longer in the rehearsal's working copy; "
                         f"`agent-loop {plan()} --rehearse` rehearses the plan again")
            continue
        from agentloop.state.whereabouts import lost_words  # --status imported it to ask

        lines.append(f"{lost_words(state.vcs or '', state.tasks[index - 1])}; `agent-loop "
                     f"{plan()} --task {index} --again` does it once more")
    if any(t.done_as for t in state.tasks):
        from agentloop.state.reconcile import reworded_lines
        lines += reworded_lines(state.tasks, show(state.task_file))  # it types the name
    for index, change in view.moved:
        lines.append(f"task {index}'s change moved: it is {change[:12]} now (rebased or "
                     "cherry-picked; its trailers name the task), still done")
    for index, commit in view.reverted:
        lines.append(f"task {index} was reverted by {commit[:12]}: a run leaves it done; "
                     f"`agent-loop {plan()} --task {index} --again` does it once more")
    return lines


def _receipt_lines(state: State, groups: dict[str, tally.Tally],
                   total: tally.Tally) -> list[str]:
    """What each group cost, what tasks since edited or removed cost, and the total."""
    lines = ["receipts:"] + [f"  {group}: {receipt.line()}" for group, receipt in groups.items()]
    if state.retired:
        lines.append(f"  edited or removed tasks: {tally.of_runs(state.retired).line()}")
    lines.append(f"  total: {total.line()}")
    return lines


def lane_lines(state: State) -> list[str]:
    """Which groups work now (a parallel run), and what each group that waits waits for."""
    working = list(dict.fromkeys(t.group for t in state.tasks if t.status == S.RUNNING))
    lines = [f"working: {', '.join(working)}"] if len(working) > 1 else []
    def open_(group: str) -> bool:
        return any(t.group == group and t.status not in (S.COMPLETED, S.SKIPPED)
                   for t in state.tasks)

    for group, needs in state.depends.items():
        left = [g for g in needs if open_(g)]
        # A group with every task done waits for nothing (a task added to the one it needs).
        if left and group not in working and open_(group):
            lines.append(f"waiting: {group} waits for {', '.join(left)}")
    return lines


def overview_text(root: Path, plans: list[PlanLine], cwd: Path) -> str:
    """--status without a task file: one line per plan of the repository."""
    if not plans:
        return f"no plan has run in {shown('.', root, cwd)} yet (agent-loop keeps its state in " \
               f"{shown(STATE_DIR, root, cwd)}/)"
    lines = []
    for plan in plans:
        where = shown(plan.folder, root, cwd) + "/"
        if plan.error is not None:
            lines.append(f"{where}: cannot read: {plan.error}")
            continue
        c = plan.counts
        done = c.get(S.COMPLETED, 0) + c.get(S.SKIPPED, 0)
        # A task that runs now is said as running, never as pending (nor left uncounted).
        pending = sum(c.get(s, 0) for s in (S.PENDING, S.INTERRUPTED))
        others = "".join(f", {n} {s}" for s, n in c.items()
                         if s in (S.RUNNING, S.BLOCKED, S.UNAPPROVED, S.CONFLICTED, S.HELD,
                                  S.LANDING))
        lines.append(f"{shown(plan.task_file, root, cwd)}: {sum(c.values())} task(s), {done} "
                     f"done, {c.get('failed', 0)} failed, {pending} pending{others}"
                     + (f"; cost {plan.cost_said}" if plan.cost_said else "")
                     + f"; state in {where}"
                     + ("; its file is gone (deleted; or renamed, and a run of the renamed "
                        "plan takes this state over)" if plan.gone else ""))
    return "\n".join(lines)


def overview_json(root: Path, plans: list[PlanLine]) -> dict[str, Any]:
    """--status --json without a task file: every plan, for scripts (paths from the root)."""
    return {"schema": SCHEMA, "root": str(root),
            "plans": [{"task_file": p.task_file if p.error is None else None,
                       "state_dir": os.path.relpath(p.folder, root), "counts": p.counts,
                       "cost_usd": p.cost_usd, "cost_known": p.cost_known, "error": p.error,
                       "file_gone": p.gone}
                      for p in plans]}


def _checks_line(task: TaskState) -> str:
    """The last round of checks of the task's newest attempt that ran any."""
    ran = next((a.checks for a in reversed(task.history) if a.checks), [])
    if not ran:
        return ""
    last = [c for c in ran if c.get("round") == ran[-1].get("round")]
    failed = [f"{c.get('command')} (" + ("timed out" if c.get("timed_out")
                                         else f"exit {c.get('exit_code')}") + ")"
              for c in last if c.get("exit_code") != 0 or c.get("timed_out")]
    seconds = sum(float(c.get("seconds") or 0) for c in last)
    if failed:
        return "\n       checks failed: " + ", ".join(failed)
    return f"\n       checks: {len(last)}/{len(last)} passed ({seconds:.1f}s)"


def _empty(task: TaskState) -> bool:
    return task.status == S.COMPLETED and not task.files and not task.change_id


def status_json(view: StatusView) -> dict[str, Any]:
    """--status --json: the same facts for scripts."""
    state = view.state
    total, groups = tally.tallied(state)
    return {"schema": SCHEMA, "task_file": state.task_file, "task_file_hash": state.task_file_hash,
            "vcs": state.vcs, "agent": state.agent, "note": view.note, "lost": list(view.lost),
            "moved": {str(i): c for i, c in view.moved},
            "landed_on": view.elsewhere[0].removeprefix("refs/heads/") if view.elsewhere
            else None,
            "reverted": {str(i): c for i, c in view.reverted},
            "budget": state.remembered.get("budget"),
            "counts": dict(Counter(str(t.status) for t in state.tasks)),
            "cost_usd": total.cost, "cost_known": total.known,
            "receipts": {"total": total.to_json(),
                         "groups": {g: r.to_json() for g, r in groups.items()},
                         "retired": tally.of_runs(state.retired).to_json()},
            "tasks": [_task_json(t, tally.of_runs(t.history)) for t in state.tasks]}


def _task_json(t: TaskState, receipt: tally.Tally) -> dict[str, Any]:
    return {"index": t.index, "group": t.group, "summary": t.summary, "status": t.status,
            "attempts": t.attempts, "change_id": t.change_id, "commit_id": t.commit_id,
            "empty": _empty(t), "session_id": t.session_id, "log": t.log,
            "cost_usd": t.cost_usd, "error": t.error, "feedback": t.feedback,
            "waiting": t.waiting, "done_as": t.done_as,
            "receipt": receipt.to_json(),
            "history": [{"number": a.number, "iteration": a.iteration, "outcome": a.outcome,
                         "reason": a.reason, "hint": a.hint, "log": a.log,
                         "session_id": a.session_id, "model": a.model, "cost_usd": a.cost_usd,
                         "cost_known": a.cost_known, "helper_cost_usd": a.helper_cost_usd,
                         "usage": a.usage, "turns": a.num_turns, "duration_ms": a.duration_ms,
                         "role": a.role, "round": a.round, "verdict": a.verdict,
                         "change_id": a.change_id, "checks": a.checks}
                        for a in t.history]}


def _task_cost(t: TaskState) -> str:
    """A task's cost in --status's list: a run of it a kill cut off spent what is not known."""
    if all(a.cost_known for a in t.history):
        return money(t.cost_usd)
    return f"{money(t.cost_usd)} or more" if t.cost_usd else "unknown"
