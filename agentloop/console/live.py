"""What the user reads while a run goes on: its events as console lines, and a sign of life while
an agent works (console.lanes): on a terminal a live line, elsewhere a plain line now and then."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Callable, Protocol

from agentloop.console.closing import summary_text
from agentloop.console.gone import stop_reaches_the_terminal
from agentloop.console.lanes import Heartbeat, Lanes, stopping_text
from agentloop.console.render import duration
from agentloop.run.checks import round_line
from agentloop.run.events import (
    AgentActivity,
    AgentFinished,
    AgentStarted,
    ChangeAbandoned,
    ChangeCreated,
    ChecksDone,
    CheckStarted,
    Event,
    HookFinished,
    LandingWaits,
    LimitWait,
    LimitWaitOver,
    MessageDistilled,
    RetryDecided,
    ReviewStarted,
    ReviewVerdict,
    RunFinished,
    RunStarted,
    Stopping,
    TaskFinished,
    TaskStarted,
)
from agentloop.run.lane_tag import LaneNote, lane
from agentloop.run.selection import shown_session
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.receipts import money
from agentloop.state.status import TaskStatus as S


def live_allowed(out: IO[str]) -> bool:
    """A live status line only on a terminal, and never in CI or with NO_COLOR."""
    return out.isatty() and not os.environ.get("CI") and "NO_COLOR" not in os.environ


HEARTBEAT_SECONDS = 60.0  # off a terminal, how often a working agent's line is printed


class _View(Protocol):
    def changed(self) -> None: ...
    def close(self) -> None: ...


class Console:
    """Prints run events, and shows what each working agent is doing: on a terminal one live
    line per lane (`live`), elsewhere the same line every `heartbeat` seconds (None: never).
    Once stdout is gone (`| head` ended; agentloop.console.gone), the lines a person still needs
    go to `err` as well (`for_stderr`)."""

    def __init__(self, out: IO[str] | None = None, live: bool | None = None,
                 cwd: Path | None = None, heartbeat: float | None = HEARTBEAT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, err: IO[str] | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.cwd = cwd
        self.clock = clock
        self.lanes = Lanes(cwd)
        self._lock = threading.Lock()
        self._review: ReviewStarted | None = None   # the review round under way
        self._reviewed = ""                          # its reviewer run's cost and time
        self._terminal = None
        self._view: _View | None = None
        self._looked = False   # whether a stop was seen (_stop_taken)
        if live_allowed(self.out) if live is None else live:
            from agentloop.console.terminal import TerminalView

            self._terminal = self._view = TerminalView(self.out, self.lanes, clock)
        elif live is None and heartbeat:
            # Only where nobody chose: `--status --follow` (live=False) replays past events.
            self._view = Heartbeat(self.lanes, self._print, heartbeat, clock)

    def __call__(self, event: Event) -> None:
        """Render one event."""
        busy = self.lanes.busy()
        self.lanes.update(event, self.clock())
        if isinstance(event, Stopping) and self._terminal is not None and busy:
            self._terminal.changed()
            return  # the live lines say it, each lane's in place of its ticking clock
        if self._terminal is None and (isinstance(event, Stopping) or (
                isinstance(event, RunFinished) and event.stopped == "interrupted")):
            self._stop_taken(event)
        if self._view is not None:
            self._view.changed()  # before the line: an ended run's live line goes first
        if isinstance(event, RunStarted) and event.warnings:
            with self._lock:   # the plan's own mistakes, before the first agent is paid
                self.err.write("".join(f"agent-loop: warning: {w}\n" for w in event.warnings))
                self.err.flush()
        if not isinstance(event, AgentActivity):
            line = self._line(event)
            if isinstance(event, LandingWaits) and self._gone():
                line = f"  {event.text}"  # while stdout is there, its LaneNote said it
            group = getattr(event, "lane", "") or lane()
            if line is not None and group:
                # A parallel run: each line says whose it is, and is printed whole.
                line = "\n".join(f"[{group}] {part.strip()}" if part.strip() else ""
                                 for part in line.splitlines())
            if line is not None:
                self._print(line)
                also = for_stderr(event, line)
                # Checked after the write: the write that finds stdout gone lost its line.
                if also is not None and self._gone():
                    with self._lock:
                        self.err.write(also + "\n")
                        self.err.flush()

    def close(self) -> None:
        """Stop the live line or the heartbeat."""
        if self._view is not None:
            self._view.close()

    def _line(self, event: Event) -> str | None:
        if isinstance(event, RunStarted):
            return run_started_line(event, self.cwd)
        if isinstance(event, TaskStarted):
            return task_line(event)
        if isinstance(event, ChangeCreated):
            return f"  {event.vcs}: created change {event.change_id[:12]}"
        if isinstance(event, ReviewStarted):
            self._review = event  # its line comes with the reviewer's run, the next event
            return None
        if isinstance(event, (AgentStarted, AgentFinished)):
            return self._agent_line(event)
        if isinstance(event, ChangeAbandoned):
            if event.kept:
                return f"  {event.vcs}: {event.kept}"
            return f"  {event.vcs}: abandoned change {event.change_id[:12]}"
        if isinstance(event, RetryDecided):
            return retry_line(event)
        if isinstance(event, LimitWait):
            until = time.strftime("%H:%M:%S", time.localtime(event.until))
            return (f"  {event.reason}: waiting until {until} ({duration(event.seconds)}, "
                    f"wait {event.wait} of {event.max_waits}; Ctrl+C stops)")
        if isinstance(event, LimitWaitOver):
            return "  the wait is over; going on"
        if isinstance(event, MessageDistilled):
            if event.distilled:
                return f"  message: {event.subject}"
            return f"  message: kept the plain one ({event.note})"
        if isinstance(event, ReviewVerdict):
            line, self._reviewed = review_line(event, self._reviewed), ""
            return line
        if isinstance(event, CheckStarted):
            return f"  check: {event.command} … (output -> {self._path(event.log)})"
        if isinstance(event, ChecksDone):
            return "  " + round_line(event.total, event.seconds, event.failed, event.round,
                                     event.rounds, baseline=event.index == 0)
        if isinstance(event, TaskFinished):
            return finished_line(event)
        if isinstance(event, RunFinished):
            return summary_text(event, self.cwd)
        if isinstance(event, LaneNote):
            return f"  {event.text}"
        if isinstance(event, Stopping):  # once; the heartbeat says no more
            return f"agent-loop: {stopping_text(event)}"
        if isinstance(event, HookFinished) and (event.exit_code != 0 or event.timed_out):
            how = (f"timed out after {duration(event.seconds)}" if event.timed_out else
                   f"failed (exit {event.exit_code})" if event.exit_code is not None else
                   "could not start")
            return f"  hook {event.hook} {how}: {event.command} (see {self._path(event.log)})"
        return None

    def _agent_line(self, event: AgentStarted | AgentFinished) -> str | None:
        """An agent run starts or ends; a reviewer's end is said with its verdict."""
        if isinstance(event, AgentStarted):
            how = f"resuming session {shown_session(event.resume)}, " if event.resume else ""
            if event.role == "reviewer" and self._review is not None:
                return (f"  review {self._review.round}/{self._review.rounds}: reviewer "
                        f"checking… (output -> {self._path(event.log)})")
            who = "reviewer" if event.role == "reviewer" else (event.agent or "agent")
            return f"  {who}: running… ({how}output -> {self._path(event.log)})"
        r = event.result
        spent = f"{money(event.cost_usd)}, {duration(event.seconds)}"
        if r.ok and event.role == "reviewer":
            self._reviewed = spent  # said with the verdict, the next line
            return None
        if r.ok:  # whether the task is done, blocked or needs review is said next
            return f"  ran in session {shown_session(r.session_id)} ({spent})"
        if event.limited:
            return None  # the wait's line says it, once
        return f"  run ended without success: {r.error} ({duration(event.seconds)})"

    def _path(self, log: str) -> str:
        """A log's path as the user can open it from where they stand."""
        return os.path.relpath(log, self.cwd) if self.cwd and os.path.isabs(log) else log

    def _stop_taken(self, event: Stopping | RunFinished) -> None:
        """A stop, off a terminal view (once a run: its stopping line, or its outcome when no
        agent was at work). With stdout a pipe whose reader the same Ctrl+C ends, the lines a
        person needs go to stderr once it has gone (for_stderr), the stop's own first
        (agentloop.console.gone.stop_reaches_the_terminal). The terminal echoed ^C where
        stderr's next line would begin: a line's end first (an outcome on stdout begins with
        one)."""
        if self._looked:
            return
        self._looked = True
        if not stop_reaches_the_terminal(self.out, self.err, _is_tty(self.err)):
            return
        if isinstance(event, Stopping) or self._gone():
            with self._lock:
                self.err.write("\n")
                self.err.flush()

    def _gone(self) -> bool:
        """Whether stdout's reader went away (a Steady stream found it gone)."""
        return bool(getattr(self.out, "gone", False))

    def _print(self, text: str) -> None:
        if self._terminal is not None:
            self._terminal.print(text)
            return
        with self._lock:
            self.out.write(text + "\n")
            self.out.flush()


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):  # closed
        return False


def for_stderr(event: Event, line: str) -> str | None:
    """What of an event's line a person still needs once stdout is gone: a wait on them, a
    stop, a held group, a task failed or blocked, the run's outcome (the summary's first line,
    not its notes, which say the held group again). The rest stays in the logs and
    events.jsonl."""
    if isinstance(event, RunFinished):
        return line.strip().splitlines()[0]
    if (isinstance(event, (LandingWaits, Stopping))
            or (isinstance(event, LaneNote) and event.stop)
            or (isinstance(event, TaskFinished) and event.status in (S.FAILED, S.BLOCKED))):
        return line.strip()  # alone on stderr: not indented under a task's heading
    return None


def retry_line(event: RetryDecided) -> str:
    """What comes after a failed attempt: a backoff, a pause excused, or the advisor's word."""
    if event.kind == "transient":
        return f"  transient failure: trying again in {duration(event.wait_seconds)}"
    if event.kind == "paused":
        return f"  {event.reason}; running it again"
    verdict = "retry" if event.retry else "give up"
    hint = f"; hint: {event.hint}" if event.retry and event.hint else ""
    source = "" if event.source == "advisor" else f" ({event.source})"
    return f"  advisor{source}: {verdict}: {event.reason}{hint}"


def finished_line(event: TaskFinished) -> str | None:
    """How a task ended, where a line says more than the lines before it; the task named as
    its `[2/4] task N` line does (the plan as the run last read it)."""
    number = event.number or event.index
    if event.status == S.UNAPPROVED:
        kept = f"; its change {event.change_id[:12]} is kept" if event.change_id else ""
        return f"  task {number} unapproved: {event.error}{kept}"
    if event.status in (S.FAILED, S.BLOCKED):
        return f"  task {number} {event.status}: {event.error}"
    if event.status == S.COMPLETED and event.change_id:
        return f"  change {event.change_id[:12]}: {event.files} file(s) changed"
    if event.status == S.COMPLETED and event.empty and event.error:
        # Its files are outside the history (inside a submodule): the line before said where.
        return "  completed, no change recorded (the line above says where its files are)"
    if event.status == S.COMPLETED and event.empty:
        return "  completed, but the task changed no files (no change recorded)"
    return None


def _landing(vcs: str) -> str:
    # jj moves no bookmark by itself: a jj run's tasks go below the working copy, and a
    # branch (bookmark) stays where it was until you set it.
    return ("landing below your working copy (jj moves no bookmark)" if vcs == "jj"
            else "landing on your branch")


def run_started_line(event: RunStarted, cwd: Path | None = None) -> str:
    """How many tasks this run takes, of how many, and what happens to the others (the lanes'
    folder named from `cwd`, where the user stands)."""
    folder = os.path.relpath(event.lanes, cwd) if cwd and event.lanes else ".agent-loop/lanes"
    notes = "".join(f"{n}\n" for n in event.notes)
    agent = f", agent: {event.agent}" if event.agent else ""
    others = event.total - event.pending - event.done
    done = f", {event.done} done already" if event.done else ""
    waiting = f", {others} not run this time (--dry-run says why)" if others > 0 else ""
    where = ("the stand-in works in the rehearsal's own copy" if event.agent == "rehearse"
             else f"the agent works in a working copy of its own under {folder}/, each "
                  f"finished task {_landing(event.vcs)}" if event.parallel < 2 and event.in_lane
             else "the agent works in the repository root" if event.parallel < 2 else
             f"up to {event.parallel} groups at once, each in a working copy of its own "
             f"under {folder}/")
    return (f"{notes}agent-loop: {event.pending} of {event.total} task(s) to run{done}{waiting} "
            f"(vcs: {event.vcs}{agent}; {where})")


def task_line(event: TaskStarted) -> str:
    """A task (attempt, iteration) starts: [2/3] counts this run's tasks, `task 4` is its
    number in the plan as it read when the task started (edited meanwhile, the user saw it
    so)."""
    if event.iteration > 1:
        return f"  iteration {event.iteration}: continuing in the same session"
    again = f" (attempt {event.attempt})" if event.attempt > 1 else ""
    if not event.count:  # an events.jsonl of an older version
        return f"\n[{event.index}/{event.total}] {event.group} > {event.summary}{again}"
    return (f"\n[{event.position}/{event.count}] task {event.number or event.index}: "
            f"{event.group} > {event.summary}{again}")


def review_line(event: ReviewStarted | ReviewVerdict, spent: str = "") -> str:
    """A reviewer round's line: it starts, approves, sends feedback, or fails."""
    if isinstance(event, ReviewStarted):
        return f"  review {event.round}/{event.rounds}: reviewer checking…"
    cost = f" ({spent})" if spent else ""
    if event.verdict == O.APPROVED:
        return f"  review {event.round}/{event.rounds}: approved{cost}"
    if event.verdict == O.FEEDBACK:
        first = next((x.strip() for x in event.text.splitlines() if x.strip()), "")
        return f"  review {event.round}/{event.rounds}: feedback: {first[:200]}{cost}"
    then = ((f"running it again in {duration(event.wait_seconds)}" if event.wait_seconds
             else "running it again") if event.again else "not approved")
    return f"  reviewer failed: {event.text}; {then}"
