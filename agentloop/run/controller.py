"""The one controller of a run, whatever --parallel K is: which group starts next (in the plan's
order, a group only once every group it waits for is done), how many at once, when the run winds
down, and what the plan says now.

pytest-xdist's model: a lane runs one group's tasks and reports; the controller owns what runs
next and hears Ctrl+C. A lane hands its result to the controller as one value (LaneEnded) on a
queue. With K=1 the lane runs in the controller's own thread, in the user's checkout; with more,
each lane runs in a thread of its own, in a working copy of its own (agentloop.run.scheduler
decides where a group works). The road is the same: start while there is room, take reports.

Between tasks a lane asks the controller whether its next task may start (`may_start`): not once
the run winds down (--stop-after-running, an error elsewhere, --max-failures), and not a task
the user removed or ticked in the plan meanwhile; a reworded task runs its new wording.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path

from agentloop.errors import AgentLoopError, BudgetReached, Interrupted
from agentloop.options import continue_args
from agentloop.plan import parse
from agentloop.proc import commands, running
from agentloop.proc.signals import shielded
from agentloop.run import budget, ledger
from agentloop.run.conflicts import GroupConflicted
from agentloop.run.context import Run
from agentloop.run.events import Emit, Event, LandingWaits, TaskFinished
from agentloop.run.lane_tag import LaneNote
from agentloop.run.scheduler import Workplaces, serialised
from agentloop.run.selection import unmet
from agentloop.state.receipts import spent
from agentloop.state.reconcile import reconcile
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.choose import LandingHeld, LaneBreach

# A file the controller looks for between reports: start no new task, let running ones finish.
STOP_FILE = "stop-after-running"
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class LaneEnded:
    """A lane's report to the controller: its group ran out of tasks, or stopped on `error`."""

    group: str
    error: BaseException | None = None


@dataclass
class PlanNews:
    """What the user changed in the plan while the run worked, as the controller read it."""

    removed: set[str] = field(default_factory=set)      # log names of tasks no longer there
    ticked: set[str] = field(default_factory=set)
    reworded: dict[str, tuple[str, str]] = field(default_factory=dict)  # log name: text, summary
    notes: list[str] = field(default_factory=list)     # the closing lines, as they happened


def stop_flag(store_dir: Path) -> Path:
    """Where `--stop-after-running` leaves its request for a running run."""
    return store_dir / STOP_FILE


class Controller:
    """One run's controller: `drive` runs the pending tasks' groups, `may_start` answers a lane
    before each task."""

    def __init__(self, run: Run, pending: list[TaskState], begun: list[TaskState]) -> None:
        # One event at a time, whichever lane emits it; what a landing waits for is recorded.
        self.run = dataclasses.replace(run, emit=serialised(self._recording(run.emit),
                                                            run.shared.lock))
        self.begun = begun
        self.groups: dict[str, list[TaskState]] = {}
        for task in pending:  # groups by heading, in the order the run takes them
            self.groups.setdefault(task.group, []).append(task)
        self.reports: queue.Queue[LaneEnded] = queue.Queue()
        self.news = PlanNews()
        self.run.shared.plan_hash = run.state.task_file_hash
        self._landed = run.job.landed if run.job is not None else frozenset()

    def drive(self) -> None:
        """Start lanes while there is room and a group is ready; take their reports; stop
        every lane on Ctrl+C; raise the first lane's error once every lane has ended."""
        run = self.run
        running.clear()
        stop_flag(run.project.store.dir).unlink(missing_ok=True)  # a request older than this run
        places = Workplaces.open(run, self.groups)
        run.shared.may_start = self.may_start
        lanes: dict[str, threading.Thread | None] = {}
        todo, first_error = list(self.groups), None
        stopped: LaneBreach | None = None
        try:
            while todo or lanes:
                while len(lanes) < run.options.parallel and not run.shared.halted():
                    group = next((g for g in todo if self._ready(g)), None)
                    if group is None:
                        break
                    todo.remove(group)
                    lanes[group] = self._start(places, group)
                if not lanes:
                    if not run.shared.halted():
                        self._say_waiting(todo)
                    break
                try:
                    report = self.reports.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    self._look_for_stop()
                    continue
                worker = lanes.pop(report.group)
                if worker is not None:
                    worker.join()
                if isinstance(report.error, GroupConflicted):
                    continue  # that group stops, its work kept; the others go on
                if isinstance(report.error, LandingHeld):
                    self._held(report.group, report.error)
                    continue  # that group is held, its work kept; the others go on
                if isinstance(report.error, LaneBreach):
                    # The agent acted outside its task: that group stops, nothing of the step
                    # landed, its work kept on its lane; the others go on; the run ends with
                    # the line that says so.
                    run.emit(LaneNote(f"{report.group} stopped: {report.error}"))
                    stopped = stopped or report.error
                    continue
                if report.error is not None:
                    first_error = first_error or report.error
                    run.shared.halt()  # no new task anywhere; running ones finish
        except BaseException as exc:
            # Ctrl+C (only this thread hears it), or a fault of the controller's own: stop every
            # lane's agent, wait for each lane to drop its interrupted attempt and save, then stop.
            run.shared.halt()
            with shielded():
                for agent in running.stop_all():
                    commands.stop_group(agent)
                for worker in lanes.values():
                    if worker is not None:
                        worker.join()
            running.clear()  # every lane has stopped: a later run in this process starts afresh
            if isinstance(exc, KeyboardInterrupt):
                raise Interrupted("interrupted") from None
            raise
        finally:
            run.shared.may_start = None
        places.close()
        if isinstance(first_error, BudgetReached):
            first_error = budget.restated(first_error, spent(run.state))
        if first_error is not None:
            raise first_error
        if stopped is not None:
            raise stopped

    def _recording(self, emit: Emit) -> Emit:
        """`emit`, recording on the task's record what its landing waits for (--status shows
        it), and clearing it once the task is finished."""
        def record(event: Event) -> None:
            state = self.run.state if hasattr(self, "run") else None
            if state is not None and isinstance(event, LandingWaits):
                for task in state.tasks:
                    if task.status == S.RUNNING and task.group == (event.lane or task.group):
                        task.waiting = event.text
                        self.run.save(task)
            elif state is not None and isinstance(event, TaskFinished):
                task = state.tasks[event.index - 1]
                if task.waiting is not None:
                    task.waiting = None
                    self.run.save(task)
            emit(event)
        return record

    def _held(self, group: str, error: LandingHeld) -> None:
        """A group whose landing waited past the lane wait: its task is `held`, its commit kept
        on its lane; the line says how to finish it (the next run lands it)."""
        run = self.run
        again = " ".join(["agent-loop", *continue_args(run.options.command)]) \
            if run.options.command else "agent-loop"
        with run.shared.lock:
            for task in run.state.tasks:
                if task.group == group and task.status in (S.RUNNING, S.HELD):
                    task.waiting = None
                    ledger.held(run, task, error.commit, f"{error}: `{again}`")
        self.news.notes.append(f"{group}: {error}: `{again}`")
        run.emit(LaneNote(f"{group}: {error}: `{again}`"))

    def _start(self, places: Workplaces, group: str) -> threading.Thread | None:
        """A lane for `group`: in this thread with one lane at a time, else a thread of its own."""
        if self.run.options.parallel == 1:
            self._lane(places, group)
            return None
        worker = threading.Thread(target=self._lane, args=(places, group), name=f"lane {group}",
                                  daemon=True)
        worker.start()
        return worker

    def _lane(self, places: Workplaces, group: str) -> None:
        """One lane: its group's tasks in its working copy; its report, whatever happened.
        Ctrl+C is the controller's to handle, so it goes past (K=1 runs this in its thread)."""
        try:
            places.run_group(group, self.groups[group], self.begun)
            self.reports.put(LaneEnded(group))
        except Exception as exc:  # noqa: BLE001 - every error is the lane's report
            self.reports.put(LaneEnded(group, exc))
        except BaseException as exc:
            if self.run.options.parallel > 1:
                self.reports.put(LaneEnded(group, exc))
            else:
                raise

    def may_start(self, task: TaskState) -> bool:
        """Asked by a lane before each task: whether it may start now. Reads the stop request
        and the plan (parsed again only when its SHA-256 changed)."""
        run = self.run
        with run.shared.lock:
            self._look_for_stop()
            if run.shared.halted():
                return False
            self._read_plan()
            if task.log_name in self.news.removed:
                self._skipped(task, f"task {task.index} ({task.summary}) was removed from the "
                                    "plan while this run worked: not started")
                run.tally.dropped.add(task.index)
                return False
            if task.log_name in self.news.ticked and task.status != S.SKIPPED:
                ledger.skip(task)
                run.save(task)
                self._skipped(task, f"task {task.index} ({task.summary}) was ticked in the plan "
                                    "while this run worked: skipped")
                return False
            wording = self.news.reworded.pop(task.log_name, None)
            if wording is not None:
                ledger.reword(task, *wording)
                run.save(task)
                self._skipped(task, f"task {task.index} was reworded while this run worked: it "
                                    f"runs as it reads now ({task.summary})")
            return True

    def _skipped(self, task: TaskState, text: str) -> None:
        self.news.notes.append(text)
        self.run.emit(LaneNote(text))

    def _read_plan(self) -> None:
        """What the user changed in the plan since the controller last looked: removed, ticked
        and reworded tasks, matched to the records as a new run would match them."""
        path = self.run.project.task_file
        try:
            data = parse.read_bytes(path)
            digest = parse.file_hash(data)
            if digest == self.run.shared.plan_hash:
                return
            self.run.shared.plan_hash = digest
            changes = reconcile(self.run.state.tasks, parse.from_bytes(path, data))
        except AgentLoopError:
            return  # a plan half saved, or broken for a moment: the run goes on as it was
        self.news.removed = {r.log_name for r in changes.removed}
        self.news.ticked = {changes.tasks[i - 1].log_name for i in changes.ticked}
        self.news.reworded = {
            old.log_name: (changes.tasks[new - 1].task, changes.tasks[new - 1].summary)
            for old, (new, _) in zip(changes.replaced, changes.edited)}

    def _ready(self, group: str) -> bool:
        """Whether every group `group` waits for is done (or the user said to ignore that)."""
        return self.run.options.ignore_deps or not unmet(self.run.state, group, self._landed)

    def _say_waiting(self, todo: list[str]) -> None:
        for group in todo:
            waits = unmet(self.run.state, group, self._landed)
            if waits and not self.run.options.ignore_deps:
                self.run.emit(LaneNote(f"{group} did not start: it waits for "
                                       f"{', '.join(waits)}, which did not finish"))

    def _look_for_stop(self) -> None:
        run = self.run
        flag = stop_flag(run.project.store.dir)
        if flag.exists() and not run.shared.halted():
            run.shared.halt()
            run.emit(LaneNote("stopping after the running tasks: no new task starts"))
            try:
                flag.unlink()
            except OSError:
                pass
