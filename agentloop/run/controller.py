"""The one controller of a run, whatever --parallel K is: which group starts next (in the plan's
order, a group only once every group it waits for is done), how many at once, when the run winds
down.

pytest-xdist's model: a lane runs one group's tasks and reports; the controller owns what runs
next, every task record, and Ctrl+C. A lane hands each step and decision to the controller as a
value (agentloop.run.decisions) on its queue, and waits for the answer; the controller applies
it through the ledger in its own thread (one save, one event), and counts what the whole run
counts (--max-failures, across lanes). At its end a lane reports LaneEnded. With K=1 the lane
runs in the controller's own thread, in the user's checkout, and its values are applied at once
by the same function; with more, each lane runs in a thread of its own, in a working copy of its
own (agentloop.run.scheduler decides where a group works). The road is the same: start while
there is room, take what the lanes hand over.

Between tasks a lane asks the controller whether its next task may start (`may_start`): not once
the run winds down (--stop-after-running, an error elsewhere, --max-failures), nor when the plan,
edited meanwhile, says otherwise (agentloop.run.plan_news, which the controller asks in its
thread).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from agentloop.errors import BudgetReached, Interrupted, LandingWithheld, RunStopped, say_first
from agentloop.ondemand import dataclass as on_first_use
from agentloop.proc import running, streamed
from agentloop.proc.signals import held_back, shielded, stopping
from agentloop.run import budget, ledger, plan_news
from agentloop.run.conflicts import GroupConflicted, GroupHeld
from agentloop.run.context import Run
from agentloop.run.decisions import Completed, Failed, Judged, MayStart, Step
from agentloop.run.events import Stopping
from agentloop.run.history_check import lost_before
from agentloop.run.lane_tag import LaneNote, lane, set_lane
from agentloop.run.scheduler import Workplaces, serialised
from agentloop.run.selection import unmet
from agentloop.state.schema import TaskState
from agentloop.vcs.choose import LandingHeld, LaneBreach

# A file the controller looks for between reports: start no new task, let running ones finish.
STOP_FILE = "stop-after-running"
POLL_SECONDS = 0.5


# Made when a lane first ends or hands over (agentloop.ondemand): after its first agent.
@on_first_use(frozen=True)
class LaneEnded:
    """A lane's report to the controller: its group ran out of tasks, or stopped on `error`;
    `begun`: the tasks it started (a lane of its own thread keeps its own list)."""

    group: str
    error: BaseException | None = None
    begun: tuple[TaskState, ...] = ()


class Reply:
    """The one place a handed value's answer goes: a lock held until the answer is in, which
    the lane waits to take. A lock, not a queue.Queue(maxsize=1): a queue is a lock and three
    conditions in Python, and a lane hands over five values or so a task."""

    __slots__ = ("_ready", "_answer")

    def __init__(self) -> None:
        self._ready = threading.Lock()
        self._ready.acquire()
        self._answer: tuple[Any, BaseException | None] = (None, None)

    def put(self, answer: tuple[Any, BaseException | None]) -> None:
        """Answer (once): the lane waiting in get() goes on."""
        self._answer = answer
        self._ready.release()

    def get(self) -> tuple[Any, BaseException | None]:
        """Wait for the answer."""
        self._ready.acquire()
        return self._answer


@on_first_use(frozen=True, eq=False)  # each one is itself: a lane waits on its own reply
class Handed:
    """A value a lane hands over from its own thread (agentloop.run.decisions), with the one
    place its answer goes: the lane waits there until the controller has applied it."""

    run: Run
    task: TaskState
    step: Step | MayStart
    reply: Reply
    group: str = ""   # the lane's, so what the controller says for it is tagged as its own


def stop_flag(store_dir: Path) -> Path:
    """Where `--stop-after-running` leaves its request for a running run."""
    return store_dir / STOP_FILE


class Controller:
    """One run's controller: `drive` runs the pending tasks' groups, `may_start` answers a lane
    before each task."""

    def __init__(self, run: Run, pending: list[TaskState], begun: list[TaskState]) -> None:
        # One event at a time, whichever lane emits it.
        self.run = dataclasses.replace(run, emit=serialised(run.emit, run.shared.lock))
        self.begun = begun
        self.groups: dict[str, list[TaskState]] = {}
        for task in pending:  # groups by heading, in the order the run takes them
            self.groups.setdefault(task.group, []).append(task)
        self.reports: queue.Queue[LaneEnded | Handed] = queue.Queue()
        # Tasks that failed for good in a row, in the order the controller heard it from any
        # lane (--max-failures counts the whole run), and the stop that count came to.
        self.failed_in_row: list[int] = []
        self.stuck: RunStopped | None = None
        # How the lanes that ended came to the run's end: the first error of one (the run
        # winds down), and the first group stopped outside its task (the others went on).
        self.first_error: BaseException | None = None
        self.stopped: LaneBreach | LandingHeld | None = None
        self.thread = threading.current_thread()
        # Handed values not yet answered: a Ctrl+C between taking one off the queue and
        # answering it must not leave its lane waiting for ever (`_join` answers these).
        self._unanswered: list[Handed] = []
        self._unanswered_lock = threading.Lock()
        run.shared.owner = self.thread  # the one thread that changes and saves records
        # Runs a kill left open count against --budget from now, before any lane starts one
        # (a lane settles its own only when it reaches that task; those on tasks no lane
        # reaches are closed now, and count as any interrupted run).
        ledger.closed_unreached(run)
        run.shared.purse.left = budget.left_open(run.state)
        # What the user changes in the plan from now on, read between tasks.
        self.news = plan_news.opened(self.run)
        self._landed = run.job.landed if run.job is not None else frozenset()

    def drive(self) -> None:
        """Start lanes while there is room and a group is ready; take their reports; stop
        every lane on Ctrl+C; raise the first lane's error once every lane has ended."""
        run = self.run
        running.clear()
        # A stop says so at once, with what it waits for: every agent is asked to end, then
        # made to, all at once (agentloop.proc.streamed.stop_groups): one limit for them all.
        running.on_stop(lambda agents: run.emit(
            Stopping(agents, 2 * streamed.STOP_GRACE_SECONDS)))
        stop_flag(run.project.store.dir).unlink(missing_ok=True)  # a request older than this run
        lanes: dict[str, threading.Thread | None] = {}
        todo = list(self.groups)
        places: Workplaces | None = None
        try:
            if todo:  # an agent is to start: none does with nothing left to run
                _wait_out_a_recorded_limit(run, [t for g in todo for t in self.groups[g]])
            # Opened inside: a stop as the sweep took your lock off a lane, or right after,
            # puts it back (Workplaces.stopped).
            places = Workplaces.open(run, self.groups)
            run.shared.may_start = self.may_start
            run.shared.take = self.take
            if not todo:
                # No lane starts, whose first look names a finished task's change you took
                # back (`jj abandon`, `git reset --hard`): said here, as a run with tasks says it.
                lost_before(run)
            while todo or lanes:
                self._start_ready(places, todo, lanes)
                if not lanes:
                    if not run.shared.halted():
                        self._say_waiting(todo)
                    break
                try:
                    report = self.reports.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    self._look_for_stop()
                    continue
                if isinstance(report, Handed):
                    self._serve(report)
                    continue
                self._lane_ended(report, lanes)
            places.close()
        except BaseException as exc:
            self._stop_lanes(lanes, places, by_you=isinstance(exc, KeyboardInterrupt))
            if isinstance(exc, KeyboardInterrupt):
                stop = Interrupted("interrupted")
                # What the lane that ran in this thread had to say first (a `.git` it moved).
                say_first(stop, getattr(exc, "said_first", ()))
                raise stop from None
            raise
        finally:
            run.shared.may_start = run.shared.take = None
            running.on_stop(None)
        self._raise_ending()

    def _stop_lanes(self, lanes: dict[str, threading.Thread | None],
                    places: Workplaces | None, by_you: bool) -> None:
        """Ctrl+C (`by_you`: only this thread hears it), or a fault of the controller's own:
        stop every lane's agent, wait for each lane to drop its interrupted attempt and save,
        then close the lanes as a stop leaves them (whatever the stop came between)."""
        run = self.run
        run.shared.halt()
        # A lane that completes its task meanwhile is answered: the task is saved and said,
        # its on-task hook cut short (it would hold the stop up to hook-timeout).
        with shielded(), stopping() if by_you else nullcontext():
            try:
                agents = running.stop_all()
                # Said for those still running: one that has ended is in the list until its
                # lane forgets it, and is not waited for.
                told = (lambda signalled: running.stop_taken(signalled) if signalled else None
                        ) if agents and by_you else None
                streamed.stop_groups(agents, told=told)
                for worker in lanes.values():
                    if worker is not None:
                        self._join(worker)
            finally:
                Workplaces.stopped(run, places)
        running.clear()  # every lane has stopped: a later run in this process starts afresh

    def _start_ready(self, places: Workplaces, todo: list[str],
                     lanes: dict[str, threading.Thread | None]) -> None:
        """A lane for each group of `todo` that is ready, in the plan's order, while there is
        room and the run goes on (with one lane at a time, it runs here to its end)."""
        run = self.run
        while len(lanes) < run.options.parallel and not run.shared.halted():
            group = next((g for g in todo if self._ready(g)), None)
            if group is None:
                break
            todo.remove(group)
            self._start(places, group, lanes)

    def _lane_ended(self, report: LaneEnded, lanes: dict[str, threading.Thread | None]
                    ) -> None:
        """A lane's last report: its thread joined, and what stopped it sorted: a group that
        stops alone, the others going on, or the first error, which winds the run down."""
        run = self.run
        self.begun.extend(report.begun)
        worker = lanes.pop(report.group)
        if worker is not None:
            worker.join()
        if isinstance(report.error, GroupConflicted):
            return  # that group stops, its work kept; the others go on
        if isinstance(report.error, GroupHeld):
            # Its task is `held` (a decision the ledger applied): the group stops, its
            # work kept on its lane, the others go on; the run ends unfinished (exit 4). The
            # closing lines say so of the task (loop._left_unfinished), named as the plan reads
            # then: a line of the group's own said it again, the command in it unrenumbered.
            run.emit(LaneNote(f"{report.group} stopped: {report.error}", stop=True))
            return
        if isinstance(report.error, (LaneBreach, LandingHeld)):
            # The agent acted outside its task, or a landing waited past the lane wait:
            # that group stops, nothing of the step landed, its work kept on its lane;
            # the others go on; the run ends with the line that says so.
            run.emit(LaneNote(f"{report.group} stopped: {report.error}", stop=True))
            self.stopped = self.stopped or report.error
            if isinstance(report.error, LaneBreach) and report.error.breach.everywhere:
                # No new task anywhere, and no landing: none lands on that main line.
                run.shared.hold_landings()
            return
        if isinstance(report.error, LandingWithheld):
            # A follow-on of the breach above: that group stops, its finished work kept.
            run.emit(LaneNote(f"{report.group} stopped: {report.error}", stop=True))
            return
        if report.error is not None:
            self.first_error = self.first_error or report.error
            run.shared.halt()  # no new task anywhere; running ones finish

    def _raise_ending(self) -> None:
        """Once every lane has ended: the first lane's error (or the --max-failures stop),
        else the first group stopped outside its task; nothing when the run ends well."""
        first_error = self.first_error or self.stuck
        if isinstance(first_error, BudgetReached):
            run = self.run
            first_error = budget.restated(
                first_error, budget.reckoned(run.options, run.agent.caps_spend, run.state,
                                             run.shared.purse.left))
        stopped = self.stopped
        if isinstance(stopped, LaneBreach) and stopped.breach.everywhere:
            # A breach of the main line every lane lands on comes first: another lane's error
            # after it (a landing that met your workspace stale) follows from it. Its line is
            # read again now that every lane has ended, from the operations since.
            raise stopped.again()
        if first_error is not None:
            raise first_error
        if stopped is not None:
            raise stopped

    def take(self, run: Run, task: TaskState, step: Step | MayStart) -> Any:
        """A lane hands `step` over: applied at once when the lane runs in this thread (K=1),
        else put on the queue for this thread, the lane waiting for the answer. Either way,
        Ctrl+C is held back until the records are saved and said (_serve)."""
        if threading.current_thread() is self.thread:
            with held_back():
                return self._apply(run, task, step)
        reply = Reply()
        handed = Handed(run, task, step, reply, lane())
        with self._unanswered_lock:
            self._unanswered.append(handed)
        self.reports.put(handed)
        answer, error = reply.get()
        if error is not None:
            raise error
        return answer

    def _serve(self, handed: Handed) -> None:
        """Apply a lane's value in this thread and answer it, whatever happens: the lane
        waits. Ctrl+C is held back until the records are saved."""
        with held_back():
            with self._unanswered_lock:
                if handed not in self._unanswered:
                    return  # answered already (taken off the queue again after a Ctrl+C)
                self._unanswered.remove(handed)
            # The events the ledger says for the lane (a task's change, a roll-back, the
            # advisor's word) name the lane, as the lane's own do; a lane's asking to start
            # may say what is the whole run's (a stop asked for, the plan put back): untagged.
            before = lane()
            set_lane("" if isinstance(handed.step, MayStart) else handed.group)
            try:
                answer = self._apply(handed.run, handed.task, handed.step)
            except BaseException as exc:  # noqa: BLE001 - the lane raises it where it waits
                handed.reply.put((None, exc))
                return
            finally:
                set_lane(before)
            handed.reply.put((answer, None))

    def _join(self, worker: threading.Thread) -> None:
        """Wait for a stopping lane, answering what it hands over as it drops its attempt."""
        while worker.is_alive():
            with self._unanswered_lock:
                left = list(self._unanswered)
            for handed in left:
                self._serve(handed)
            try:
                report = self.reports.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(report, Handed):
                self._serve(report)
            else:
                self.begun.extend(report.begun)
        worker.join()

    def _apply(self, run: Run, task: TaskState, step: Step | MayStart) -> Any:
        """One value, in this thread: through the ledger (records, one save, one event), then
        what it means for the whole run (--max-failures, across every lane)."""
        if isinstance(step, MayStart):
            return self._may_start(task)
        answer = ledger.apply(run, task, step)
        if isinstance(step, Judged) and isinstance(step.decision, Failed):
            self.failed_in_row.append(task.index)
        elif isinstance(step, Completed):
            self.failed_in_row.clear()
        failed = self.failed_in_row
        if len(failed) >= run.options.max_failures and self.stuck is None:
            # Named as the plan last read says (the stop ends the run before another read:
            # the closing lines' numbers); one removed from it since, by its words.
            numbers = run.shared.plan_numbers
            tasks = ", ".join(f'"{t.summary}"' if numbers and t.log_name not in numbers
                              else str(run.shared.number(t))
                              for t in (run.state.tasks[i - 1] for i in failed))
            self.stuck = RunStopped(f"the agent seems stuck: {len(failed)} tasks failed in a "
                                    f"row (tasks {tasks}); read their logs (agent-loop --status "
                                    "lists them) and fix the cause")
            self.run.shared.halt()  # no new task anywhere; running ones finish
        return answer

    def _start(self, places: Workplaces, group: str,
               lanes: dict[str, threading.Thread | None]) -> None:
        """A lane for `group`, in `lanes`: in this thread with one lane at a time, else a thread
        of its own."""
        if self.run.options.parallel == 1:
            self._lane(places, group)
            lanes[group] = None
            return
        worker = threading.Thread(target=self._lane, args=(places, group), name=f"lane {group}",
                                  daemon=True)
        # Started and in `lanes` at once: a stop in between would not wait for a lane it does
        # not know, which goes on making its working copy as the run exits.
        with held_back():
            worker.start()
            lanes[group] = worker

    def _lane(self, places: Workplaces, group: str) -> None:
        """One lane: its group's tasks in its working copy; its report, whatever happened.
        Ctrl+C is the controller's to handle, so it goes past (K=1 runs this in its thread)."""
        own = self.run.options.parallel > 1
        mine = [] if own else self.begun  # a lane's own thread touches no list of ours
        try:
            places.run_group(group, self.groups[group], mine)
            self.reports.put(LaneEnded(group, None, tuple(mine) if own else ()))
        except Exception as exc:  # noqa: BLE001 - every error is the lane's report
            self.reports.put(LaneEnded(group, exc, tuple(mine) if own else ()))
        except BaseException as exc:
            if own:
                self.reports.put(LaneEnded(group, exc, tuple(mine)))
            else:
                raise

    def may_start(self, task: TaskState) -> bool:
        """Asked by a lane before each task: whether it may start now (answered in the
        controller's thread)."""
        return bool(self.take(self.run, task, MayStart()))

    def _may_start(self, task: TaskState) -> bool:
        """Whether `task` may start now: not once a stop was asked for, nor when the plan as
        it reads now says otherwise (agentloop.run.plan_news)."""
        run = self.run
        self._look_for_stop()
        if run.shared.halted():
            return False
        taken = run.project.store.keep_lock()  # lock files deleted under the run
        if taken:
            run.emit(LaneNote(f"{' and '.join(run.project.shown(p) for p in taken)} deleted "
                              "while this run worked: locked again, so no second run starts "
                              "beside this one"))
        return plan_news.allows(run, self.news, task)

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
            run.emit(LaneNote("stopping after the running tasks: no new task starts",
                              stop=True))
            try:
                flag.unlink()
            except OSError:
                pass


def _wait_out_a_recorded_limit(run: Run, pending: list[TaskState]) -> None:
    """Before any lane starts: a usage limit an earlier run met and stopped in (Ctrl+C in its
    wait, out of waits) is waited out as that run would have, where a task taken at once
    would start an agent the limit turns away; the task keeps its place all the while. Not
    when no task to run starts an agent: a limited review's work that lands unreviewed, as
    you turned review off."""
    if not any(t.history and t.history[-1].resets_at for t in run.state.tasks):
        return  # the usual run: the waits' module is not loaded
    from agentloop.run.attempt import unreviewed_landing
    from agentloop.run.waits import recorded_limit, wait_for_limit

    if all(unreviewed_landing(t, run.options.review) for t in pending):
        return

    limit = recorded_limit(run.state, run.clock.time())
    if limit is not None:
        wait_for_limit(run, limit)
