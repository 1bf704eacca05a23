"""A sign of life while agents work: what each lane (one worker: today the run's one lane "") is
doing, kept from the run's events, and its one line: elapsed time, last tool call, turns, cost.
No output here: a terminal view redraws the lines, a heartbeat prints them now and then."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from agentloop.console.render import duration
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.run.events import (
    AgentActivity,
    AgentFinished,
    AgentStarted,
    CheckStarted,
    Event,
    LaneHeld,
    RunFinished,
    Stopping,
    TaskStarted,
)
from agentloop.state.receipts import money


@dataclass
class Lane:
    """One worker: its task, and what its current agent run (or check) is doing."""

    task: str = ""                # "Backend [2/4]": the task's group and place in the run
    index: int = 0                # the task's number, so a new task starts its cost afresh
    since: float | None = None    # when its current run began (monotonic); None: between runs
    doing: str = ""
    tool_calls: int = 0
    turns: int = 0
    spent: float = 0.0            # the task's finished runs' cost (a run's own comes at its end)
    beat_at: float = 0.0          # when the heartbeat prints this lane next
    stopping: str = ""            # a stop was taken: what its line says instead of ticking


class Lanes:
    """Every lane's state, changed by events on the run's thread and read by a view's thread."""

    def __init__(self, here: Path | None = None) -> None:
        self._lanes: dict[str, Lane] = {}
        self._lock = threading.Lock()
        # Agents name files by absolute path; under where the user stands, the rest will do.
        self._here = f"{here}{os.sep}" if here else None

    def update(self, event: Event, now: float) -> None:
        """Follow one event: a run or check starts or reports, or something else ends it."""
        key = getattr(event, "lane", "")
        with self._lock:
            if isinstance(event, RunFinished):  # whatever a stop left running is over
                for ended in self._lanes.values():
                    ended.since = None
                return
            if isinstance(event, Stopping):  # each working lane waits for its agent now
                for waiting in self._lanes.values():
                    if waiting.since is not None:
                        waiting.stopping = stopping_text(event, one_lane=True)
                return
            lane = self._lanes.setdefault(key, Lane())
            if isinstance(event, TaskStarted):
                if event.index != lane.index:
                    lane.index, lane.spent = event.index, 0.0
                # Counted as the serial counter counts: this run's tasks, not the plan's.
                lane.task = (f"{event.group} [{event.position}/{event.count}]" if event.count
                             else f"{event.group} [{event.index}/{event.total}]")
            if isinstance(event, (AgentStarted, CheckStarted)):
                lane.since, lane.beat_at, lane.stopping = now, 0.0, ""
                lane.tool_calls = lane.turns = 0
                lane.doing = (f"check: {event.command}" if isinstance(event, CheckStarted)
                              else "reviewer starting" if event.role == "reviewer" else "starting")
            elif isinstance(event, LaneHeld):
                until = time.strftime("%H:%M", time.localtime(event.until))
                lane.since, lane.beat_at, lane.doing = now, 0.0, f"held: usage limit until {until}"
                lane.tool_calls = lane.turns = 0
            elif isinstance(event, AgentActivity):
                lane.doing = event.tool or event.text
                if self._here:
                    lane.doing = lane.doing.replace(self._here, "")
                lane.tool_calls, lane.turns = event.tool_calls, event.turns
            else:
                if isinstance(event, AgentFinished):
                    lane.spent += event.cost_usd
                lane.since = None

    def busy(self) -> bool:
        """Whether any lane has a run going."""
        with self._lock:
            return any(lane.since is not None for lane in self._lanes.values())

    def lines(self, now: float) -> list[str]:
        """One line per lane with a run going (a lane's name leads when it has one)."""
        with self._lock:
            return [_line(key, lane, now) for key, lane in self._lanes.items()
                    if lane.since is not None]

    def due(self, now: float, interval: float) -> list[str]:
        """The lines of the lanes whose run has gone `interval` seconds since it began or was
        last shown; each is shown again `interval` later."""
        with self._lock:
            out = []
            for key, lane in self._lanes.items():
                if lane.since is None or lane.stopping:  # the stop's own line said it once
                    continue
                if not lane.beat_at:
                    lane.beat_at = lane.since + interval
                if now >= lane.beat_at:
                    out.append(_line(key, lane, now))
                    lane.beat_at = now + interval
            return out


def stopping_text(event: Stopping, one_lane: bool = False) -> str:
    """What a stop waits for, and how long at most (each agent is asked to end, then made to):
    said for the run, or for `one_lane` of several."""
    within = f"{event.within:.0f}s"
    if event.agents == 1:
        return f"stopping: waiting for the agent to end (cut short within {within})"
    if one_lane:
        return f"stopping: waiting for its agent to end (all cut short within {within})"
    return f"stopping: waiting for {event.agents} agents to end (cut short within {within})"


def _line(key: str, lane: Lane, now: float) -> str:
    assert lane.since is not None
    who = f"{lane.task}: " if key else ""
    if lane.stopping:  # no clock ticking on, as if the task still ran
        return f"  ■ {who}{lane.stopping}"
    counts = [f"{n} {word}{'s' if n != 1 else ''}"
              for n, word in ((lane.turns, "turn"), (lane.tool_calls, "tool call")) if n]
    elapsed = now - lane.since  # whole seconds: a ticking tenth is noise
    # What is doing comes last: a narrow terminal cuts the line's end, and a path may be long.
    parts = [duration(elapsed) if elapsed >= 60 else f"{int(elapsed)}s", ", ".join(counts),
             f"{money(lane.spent)} so far" if lane.spent else "", lane.doing]
    return f"  … {who}" + " · ".join(p for p in parts if p)


class Heartbeat:
    """Off a terminal: each lane's line printed once every `interval` seconds while its run
    goes, so a log shows a working agent is alive. A thread of its own, only while one runs."""

    def __init__(self, lanes: Lanes, write: Callable[[str], None], interval: float,
                 clock: Callable[[], float]) -> None:
        self.lanes, self.write, self.interval, self.clock = lanes, write, interval, clock
        self._beating = False
        self._guard = threading.Lock()  # the thread's last look and a new start never cross
        self._quit = threading.Event()

    def changed(self) -> None:
        """Start beating when a run began; the thread ends by itself once none goes."""
        with self._guard:
            if self._beating or not self.lanes.busy():
                return
            self._beating = True
        threading.Thread(target=self._beat, daemon=True, name="agent-loop heartbeat").start()

    def close(self) -> None:
        """Stop beating at once."""
        self._quit.set()

    def _beat(self) -> None:
        tick = min(1.0, self.interval / 4)
        while not self._quit.wait(tick):
            with self._guard:
                if not self.lanes.busy():
                    self._beating = False
                    return
            for line in self.lanes.due(self.clock(), self.interval):
                self.write(line)
