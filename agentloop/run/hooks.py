"""Hooks: the user's own command lines, run when the run ends (`on-finish`) and after each
completed task (`on-task`), in the user's shell, in the repository root.

A hook is told what happened twice: as JSON on stdin, and in AGENT_LOOP_EVENT_* variables
(options.EVENT_PREFIX), which settings never read, so a hook that starts agent-loop again does
not hand them back as settings. Its output goes to hooks.log in the plan's folder. A hook that
fails, cannot start or outlives --hook-timeout (stopped with everything it started) is said in
one HookFinished event and changes nothing else: not the run's result, not its exit code.
A Ctrl+C while a hook runs stops the hook at once and then agent-loop, as anywhere else.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloop import proc
from agentloop.errors import AgentBlocked, Interrupted, ProcessError, RunStopped
from agentloop.files import jsonbytes
from agentloop.options.record import EVENT_PREFIX, RunOptions
from agentloop.proc import signals
from agentloop.run.checks import argv
from agentloop.run.events import (
    AgentFinished,
    Emit,
    Event,
    HookFinished,
    MessageDistilled,
    RetryDecided,
    RunFinished,
    TaskFinished,
    TaskStarted,
)
from agentloop.run.summary import ended_with
from agentloop.state.project import Project
from agentloop.state.schema import STATUSES, now
from agentloop.state.status import KEPT
from agentloop.state.tally import usd


@dataclass
class Hooks:
    """Watches a run's events: runs on-task after each completed task, keeps the run's last
    summary for on-finish. `report` takes the HookFinished events."""

    project: Project
    options: RunOptions
    report: Emit
    summary: RunFinished | None = None
    # What on-task tells of each task begun and not yet finished, by its run number: lanes
    # run tasks at once (--parallel), and each task's call names its own words and cost.
    _tasks: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The task each lane runs now ("": the one lane of a run without --parallel): an agent's
    # end names its lane, not its task.
    _running: dict[str, int] = field(default_factory=dict)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunFinished):
            self.summary = event
        elif isinstance(event, TaskStarted):
            self._running[event.lane] = event.index
            # A retry of the task adds to what its earlier attempts cost.
            task = self._tasks.setdefault(event.index, {"index": event.index, "cost_usd": 0.0})
            task.update(group=event.group, summary=event.summary)
        elif isinstance(event, AgentFinished):
            # By its own task when it names one: a landing's conflict rounds end after the
            # next task in its lane began. An events.jsonl of an older version: by its lane.
            self._charge(event.index or self._running.get(event.lane, 0), event.cost_usd)
        elif isinstance(event, (MessageDistilled, RetryDecided)):
            # The task's helper calls (its message's writer, its retry advisor): the task's
            # cost is what --status says it cost.
            self._charge(event.index, event.cost_usd)
        elif isinstance(event, TaskFinished):
            began = self._tasks.pop(event.index, {})
            if event.status in KEPT and self.options.on_task:
                self._on_task(self.options.on_task, event, began)

    def _charge(self, index: int, cost: float) -> None:
        task = self._tasks.get(index)
        if task is not None:  # not one that ended already (its hook ran)
            task["cost_usd"] = usd(task["cost_usd"] + cost)  # as --status sums it

    def _on_task(self, command: str, event: TaskFinished, began: dict[str, Any]) -> None:
        # By its number in the plan as the run last read it (edited meanwhile, the run's own
        # number names another task there).
        number = event.number or event.index
        task = {**began, "index": number, "status": event.status,
                "change_id": event.change_id or None, "files": event.files,
                "error": event.error}
        self._run("on-task", command, {"task": task}, {
            "RESULT": event.status, "TASK": str(number),
            "TASK_SUMMARY": str(task.get("summary", "")), "CHANGE": event.change_id or "",
            "COST_USD": f"{task.get('cost_usd', 0.0):.4f}"}, number)

    def finished(self, summary: RunFinished | None, error: BaseException | None) -> None:
        """The run ended (with `summary`, or by `error`): run on-finish, if there is one."""
        if not self.options.on_finish:
            return
        # A run stopped by an error emitted its summary before the error came up to us.
        summary = summary or self.summary or RunFinished((), 0.0, 0.0,
                                                         str(self.project.store.logs))
        result, code = outcome(summary, error)
        reason = summary.stopped or (str(error) if error is not None else "") or None
        counts = dict(summary.counts)
        data = {"result": result, "exit_code": code, "reason": reason, "counts": counts,
                "cost_usd": summary.cost_usd, "seconds": summary.seconds,
                # Named as the plan reads now (`--status`'s numbers; an edit the run took in
                # renumbers them); the unfinished tasks it no longer has, by their words.
                "unfinished": list(summary.unfinished_now
                                   if summary.unfinished_now or summary.unfinished_removed
                                   else summary.unfinished),
                "unfinished_removed": list(summary.unfinished_removed),
                "logs": summary.logs}
        names = {"RESULT": result, "EXIT_CODE": str(code), "REASON": reason or "",
                 "COST_USD": f"{summary.cost_usd:.4f}"}
        names.update((s.upper(), str(counts.get(s, 0))) for s in STATUSES)
        self._run("on-finish", self.options.on_finish, data, names, 0)

    def _run(self, hook: str, command: str, data: dict[str, Any], names: dict[str, str],
             index: int) -> None:
        plan = str(self.project.task_file)
        payload = {"hook": hook, "plan": plan, "root": str(self.project.root), **data}
        env = {**os.environ, **{EVENT_PREFIX + k: v for k, v in
                                {"HOOK": hook, "PLAN": plan, **names}.items()}}
        finished = run_hook(hook, command, payload, env, self.project,
                            self.options.hook_timeout, index)
        if finished is not None:
            self.report(finished)


def outcome(summary: RunFinished, error: BaseException | None) -> tuple[str, int]:
    """How a run ended, in a word, and the exit code agent-loop ends with."""
    code = ended_with(summary, error)
    if isinstance(error, (KeyboardInterrupt, Interrupted)):
        return "interrupted", code
    if isinstance(error, (RunStopped, AgentBlocked)):
        return "stopped", code
    if error is not None:
        return "failed", code
    # Kept on its branch, for a person: also a task the plan no longer has at the end (its
    # words apart from the counts, which count the plan as it reads then).
    if code and (dict(summary.counts).get("conflicted") or any(
            status == "conflicted" for _, status in summary.removed_since)):
        return "conflicted", code
    return ("done" if code == 0 else "failed"), code


def run_hook(hook: str, command: str, payload: dict[str, Any], env: dict[str, str],
             project: Project, timeout: float, index: int = 0) -> HookFinished | None:
    """Run one hook to its end (or its timeout); its output goes to hooks.log. None: a stop
    held back cut it short (signals.cut_short)."""
    log = project.store.dir / "hooks.log"
    started = time.monotonic()
    code, output, timed_out = None, "", False
    # A stop held back until the task's records are saved and said (the controller's
    # held_back) stops the hook at once all the same, and comes in as that hold ends.
    held = signals.holding()
    try:
        with signals.cut_short():
            done = proc.run(argv(command), cwd=project.root, env=env, check=False,
                            timeout=timeout, input=jsonbytes.dumps(payload), guarded=True)
        code, output = done.returncode, done.stdout
    except ProcessError as exc:
        timed_out = isinstance(exc.__cause__, subprocess.TimeoutExpired)
        output = "" if timed_out else str(exc)
    except KeyboardInterrupt:
        # Said as the log says how every hook ended: on-finish, stopped by your Ctrl+C, too.
        _append(log, f"== {now()} {hook}: {command}\n== stopped (Ctrl+C) "
                     f"({time.monotonic() - started:.1f}s)\n")
        if not held:
            raise
        return None  # the stop, let in as the hold ends, is what is said
    seconds = time.monotonic() - started
    ended = (f"timed out after {timeout:g}s" if timed_out else
             f"exit {code}" if code is not None else "could not start")
    _append(log, f"== {now()} {hook}: {command}\n{output.rstrip()}\n== {ended} "
                 f"({seconds:.1f}s)\n")
    return HookFinished(hook, command, code, seconds, timed_out, project.store.relative(log),
                        index)


def _append(log: Path, text: str) -> None:
    """A hook's record in hooks.log; a log that cannot be written loses the record only."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8", errors="replace") as out:
            out.write(text)
    except OSError:
        pass
