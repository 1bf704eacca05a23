"""What the user reads: run events as console lines, the plan (--dry-run) and --status."""

from __future__ import annotations

import os
from collections import Counter
import sys
import threading
import time
from typing import IO, Any

from agentloop.events import (AgentActivity, AgentFinished, AgentStarted, ChangeAbandoned,
                              ChangeCreated, Event, LimitWait, MessageDistilled, RetryDecided,
                              RunFinished,
                              RunStarted, ReviewStarted, ReviewVerdict, TaskFinished,
                              TaskStarted)
from agentloop import receipts
from agentloop.state import State, TaskState


def live_allowed(out: IO[str]) -> bool:
    """A live status line only on a terminal, and never in CI or with NO_COLOR."""
    return out.isatty() and not os.environ.get("CI") and "NO_COLOR" not in os.environ


def money(usd: float) -> str:
    """Dollars as the user reads them."""
    return f"${usd:.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def duration(seconds: float) -> str:
    """12s, 3m05s, 1h02m."""
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Console:
    """Prints run events; on a terminal also keeps one live line with elapsed time and activity."""

    def __init__(self, out: IO[str] | None = None, live: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.live = live_allowed(self.out) if live is None else live
        self._activity = ""
        self._since = 0.0
        self._ticker: threading.Thread | None = None
        self._running = False
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        """Render one event."""
        if isinstance(event, AgentActivity):
            self._activity = event.text
            self._draw()
            return
        self._stop_live()
        line = self._line(event)
        if line is not None:
            self._print(line)
        if isinstance(event, AgentStarted) and self.live:
            self._start_live()

    def _line(self, event: Event) -> str | None:
        if isinstance(event, RunStarted):
            notes = "".join(f"{n}\n" for n in event.notes)
            return (f"{notes}agent-loop: {event.pending} of {event.total} task(s) to run "
                    f"(vcs: {event.vcs})")
        if isinstance(event, TaskStarted):
            if event.iteration > 1:
                return f"  iteration {event.iteration}: continuing in the same session"
            again = f" (attempt {event.attempt})" if event.attempt > 1 else ""
            return f"\n[{event.index}/{event.total}] {event.group} > {event.summary}{again}"
        if isinstance(event, ChangeCreated):
            return f"  {event.vcs}: created change {event.change_id[:12]}"
        if isinstance(event, AgentStarted):
            how = f"resuming session {event.resume}, " if event.resume else ""
            return f"  claude: running… ({how}output -> {event.log})"
        if isinstance(event, AgentFinished):
            r = event.result
            if r.ok:
                return (f"  completed in session {r.session_id} "
                        f"({money(event.cost_usd)}, {duration(event.seconds)})")
            return f"  failed: {r.error} ({duration(event.seconds)})"
        if isinstance(event, ChangeAbandoned):
            return f"  {event.vcs}: abandoned change {event.change_id[:12]}"
        if isinstance(event, RetryDecided):
            if event.kind == "transient":
                return f"  transient failure: trying again in {duration(event.wait_seconds)}"
            verdict = "retry" if event.retry else "give up"
            hint = f"; hint: {event.hint}" if event.retry and event.hint else ""
            return f"  advisor ({event.source}): {verdict}: {event.reason}{hint}"
        if isinstance(event, LimitWait):
            until = time.strftime("%H:%M:%S", time.localtime(event.until))
            return (f"  {event.reason}: waiting until {until} ({duration(event.seconds)}, "
                    f"wait {event.wait} of {event.max_waits}; Ctrl+C stops)")
        if isinstance(event, MessageDistilled):
            if event.distilled:
                return f"  message: {event.subject}"
            return f"  message: kept the plain one ({event.note})"
        if isinstance(event, (ReviewStarted, ReviewVerdict)):
            return review_line(event)
        if isinstance(event, TaskFinished):
            if event.status == "unapproved":
                kept = f"; its change {event.change_id[:12]} is kept" if event.change_id else ""
                return f"  task {event.index} unapproved: {event.error}{kept}"
            if event.status in ("failed", "blocked"):
                return f"  task {event.index} {event.status}: {event.error}"
            if event.status == "completed" and event.change_id:
                return f"  change {event.change_id[:12]}: {event.files} file(s) changed"
            return None
        if isinstance(event, RunFinished):
            return summary_text(event)
        return None

    def _print(self, text: str) -> None:
        with self._lock:
            self.out.write(text + "\n")
            self.out.flush()

    def _draw(self) -> None:
        if not self.live or not self._running:
            return
        elapsed = duration(time.monotonic() - self._since)
        text = f"  … {elapsed} · {self._activity}"[:120]
        with self._lock:
            self.out.write("\r\x1b[K" + text)
            self.out.flush()

    def _start_live(self) -> None:
        self._since, self._activity, self._running = time.monotonic(), "starting", True

        def tick() -> None:
            while self._running:
                self._draw()
                time.sleep(1)

        self._ticker = threading.Thread(target=tick, daemon=True)
        self._ticker.start()

    def _stop_live(self) -> None:
        if self._running:
            self._running = False
            with self._lock:
                self.out.write("\r\x1b[K")


def review_line(event: ReviewStarted | ReviewVerdict) -> str:
    """A reviewer round's line: it starts, approves, sends feedback, or fails."""
    if isinstance(event, ReviewStarted):
        return f"  review {event.round}/{event.rounds}: reviewer checking…"
    if event.verdict == "approved":
        return f"  approved in round {event.round}"
    if event.verdict == "feedback":
        first = next((x.strip() for x in event.text.splitlines() if x.strip()), "")
        return f"  feedback: {first[:200]}"
    then = ((f"running it again in {duration(event.wait_seconds)}" if event.wait_seconds
             else "running it again") if event.again else "not approved")
    return f"  reviewer failed: {event.text}; {then}"


def summary_text(event: RunFinished) -> str:
    """The closing lines of a run."""
    counts = ", ".join(f"{n} {status}" for status, n in event.counts)
    head = "done" if event.stopped is None else "stopped"
    notes = "".join(f"\nlook at: {note}" for note in event.notes)
    tokens = dict(event.tokens)
    spent = (f"; tokens in {tokens.get('input_tokens', 0):,} out {tokens.get('output_tokens', 0):,}"
             if tokens else "")
    return (f"\nagent-loop {head}: {counts}; cost {money(event.cost_usd)}{spent}; "
            f"time {duration(event.seconds)}; logs in {event.logs}/{notes}")


def _counts(state: State) -> dict[str, int]:
    """How many tasks have each status, in the order statuses first appear."""
    return dict(Counter(t.status for t in state.tasks))


def status_lines(state: State) -> list[str]:
    """--status: counts by status, then one line per task."""
    counts = _counts(state)
    total_cost = sum(t.cost_usd for t in state.tasks)
    lines = [f"{state.task_file}: {len(state.tasks)} task(s): "
             + ", ".join(f"{n} {s}" for s, n in counts.items())
             + f"; cost {money(total_cost)}; vcs {state.vcs or '-'}"]
    for t in state.tasks:
        change = (t.change_id or "-")[:12]
        lines.append(f"{t.index:>4} {t.status:<11} {t.attempts}x  {change:<12} "
                     f"{money(t.cost_usd):>7}  {t.group} > {t.summary}"
                     + (f"\n       log: {t.log}" if t.log else "")
                     + (f"\n       error: {t.error}" if t.error and t.status != "completed" else "")
                     + ("\n       feedback: " + t.feedback.replace("\n", "\n         ")
                        if t.feedback and t.status == "unapproved" else ""))
    lines.append("receipts:")
    for group, receipt in receipts.by_group(state).items():
        lines.append(f"  {group}: {receipt.line()}")
    lines.append(f"  total: {receipts.total(state.tasks).line()}")
    return lines


def status_json(state: State) -> dict[str, Any]:
    """--status --json: the same facts for scripts."""
    counts = _counts(state)
    return {"task_file": state.task_file, "task_file_hash": state.task_file_hash,
            "vcs": state.vcs, "counts": counts,
            "cost_usd": round(sum(t.cost_usd for t in state.tasks), 6),
            "receipts": {"total": receipts.total(state.tasks).to_json(),
                         "groups": {g: r.to_json() for g, r in receipts.by_group(state).items()}},
            "tasks": [_task_json(t) for t in state.tasks]}


def _task_json(t: TaskState) -> dict[str, Any]:
    return {"index": t.index, "group": t.group, "summary": t.summary, "status": t.status,
            "attempts": t.attempts, "change_id": t.change_id, "commit_id": t.commit_id,
            "session_id": t.session_id, "log": t.log, "cost_usd": t.cost_usd, "error": t.error,
            "feedback": t.feedback, "receipt": receipts.of_task(t).to_json(),
            "history": [{"number": a.number, "iteration": a.iteration, "outcome": a.outcome,
                         "reason": a.reason, "hint": a.hint, "log": a.log,
                         "session_id": a.session_id, "model": a.model, "cost_usd": a.cost_usd,
                         "helper_cost_usd": a.helper_cost_usd, "usage": a.usage,
                         "turns": a.num_turns, "duration_ms": a.duration_ms, "role": a.role,
                         "round": a.round, "verdict": a.verdict}
                        for a in t.history]}
