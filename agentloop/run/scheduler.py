"""Where a group works, the one place that decides it: each group in a working copy of its own
(agentloop.vcs.lanes), its tasks landing on the main line as they finish, whatever --parallel K
is; or, with `workplace = "checkout"` (and where no lane can be: agentloop.run.workplace) and
one lane at a time, in the user's checkout, each task a change on the line the user is on. The
controller (agentloop.run.controller) decides when; this module, where.
"""

from __future__ import annotations

import dataclasses
import threading
from functools import partial
from pathlib import Path
from typing import Any

from agentloop.errors import CheckFailed, VcsError
from agentloop.proc import running
from agentloop.run.context import Run, Tally
from agentloop.run.decisions import Waiting
from agentloop.run.events import Emit, Event, LandingWaits
from agentloop.run.handover import hand
from agentloop.run.lane import run_lane
from agentloop.run.lane_tag import LaneNote, lane, set_lane
from agentloop.run.verify import FirstChecks
from agentloop.run.workplace import furnish_lane, in_lanes
from agentloop.state.schema import TaskState
from agentloop.state.status import OPEN
from agentloop.state.status import TaskStatus as S
from agentloop.vcs import lanes, relative_to
from agentloop.vcs.choose import (
    MainLine,
    has_lane,
    keep_workspace,
    locks_back,
    open_lane,
    open_main_line,
    open_workspace,
    remove_workspace,
    removing_workspace,
    sweep_workspaces,
)
from agentloop.vcs.protocol import LandsOnABranch, Lane

# Statuses of a group's task that keep its working copy (an attempt a killed run left open, a
# change kept for a person, one held by the user's edits, one whose landing a kill cut short):
# the next run goes on there, landing what is kept first.
LEFT_OPEN = OPEN | {S.CONFLICTED, S.HELD, S.LANDING}


class Workplaces:
    """Where each group of one run works; `run_group` runs a group's tasks there."""

    def __init__(self, run: Run, main: MainLine | None, names: dict[str, str],
                 groups: dict[str, list[TaskState]], listed: Any = None, serial: str = "",
                 holder: str | None = None, own: set[str] | None = None,
                 first: FirstChecks | None = None, older: dict[str, str] | None = None
                 ) -> None:
        self.run, self.main, self.names, self.groups = run, main, names, groups
        # Lanes the released version left in this linked checkout, under the main checkout's
        # names (_released_names): adopted by the lane that goes on from them.
        self._older = older or {}
        self.order = list(groups)
        # The working copies the sweep listed, for the first lane opened (no other has been
        # added or removed before it); later ones ask again.
        self._listed = listed
        self._taking = threading.Lock()
        # The one lane of a sequential run (agentloop.vcs.lanes.serial_lane); the group whose
        # leftover it holds (a killed run's attempt, a conflict), which alone goes on there
        # until it ends with nothing left; and, between two groups, its working copy and VCS,
        # which the next group takes as they are.
        self.serial = serial
        self._holder = holder
        self._own = own or set()  # groups that go on in a lane of their own (_holder's doc)
        self._carried: tuple[lanes.Workspace, Lane] | None = None
        # Several lanes at once: the user's checks, once, in the first lane to come to an
        # agent, before any lane's (run_group).
        self._first = first

    @classmethod
    def open(cls, run: Run, groups: dict[str, list[TaskState]]) -> "Workplaces":
        """The run's workplaces: the checkout, or (lanes) the main line and the lanes a killed
        run left swept. The user's checks run once before the run's first agent, where it
        works (run_group)."""
        if run.options.parallel == 1 and not in_lanes(run):
            return cls(run, None, {}, groups)
        if run.vcs.name not in ("git", "jj"):
            raise VcsError(f"--parallel needs git or jj, not {run.vcs.name}")
        said = lambda text: run.emit(LaneNote(text))  # noqa: E731
        main = open_main_line(run.vcs.name, run.project.root, on_wait=said,
                              stopping=running.stopping, wait_limit=run.options.lane_wait,
                              checkout=run.vcs, key=_plan_key(run))
        main.on_waits = partial(_waits, run)
        run.shared.main_line = main  # the closing lines ask it where the tasks went
        names = _lane_names(run)
        serial = lanes.serial_lane(_plan_key(run))
        older = _released_names(run, set(names.values()) | {serial})
        holder = _holder(run, names, older)
        pending = [t for tasks in groups.values() for t in tasks]
        # Groups that go on from what they left in a lane of their own.
        own = {g for g, tasks in groups.items()
               if g != holder and any(t.status in LEFT_OPEN for t in tasks)}
        if run.options.parallel == 1:
            # One lane for every other group: a group's own lane is kept only while it holds
            # something it goes on from.
            keep = {names[g] for g in own} | {serial}
        else:
            keep = {names[g] for g in groups} | ({serial} if holder is not None else set())
        # Lanes of groups with nothing left to run (a run killed before it cleaned up): every
        # task of theirs that finished is on the main line; anything else is kept, and said.
        # A lane the released version made here under its name in this linked checkout is
        # this checkout's: kept where a group goes on from it (adopted as it opens), else
        # swept as a killed run's is.
        going_on = {names[g] for g in own} | ({serial} if holder is not None else set())
        swept = sweep_workspaces(run.vcs.name, run.project.root,
                                 keep | {older[n] for n in going_on if n in older},
                                 set(names.values()) | {serial} | set(older.values()),
                                 _branch(main))
        for note in swept.notes:
            run.emit(LaneNote(note))
        first = FirstChecks(pending) if run.options.parallel > 1 else None
        return cls(run, main, names, groups, swept.listed, serial, holder, own, first,
                   {n: o for n, o in older.items() if n in going_on})

    @staticmethod
    def stopped(run: Run, places: Workplaces | None) -> None:
        """A stop's close of the run's workplaces (`places`; None: the stop came before they
        were open, or as they opened): every lane of the plan still bearing a lock of yours the
        sweep took off, to go on there, gets it back."""
        if places is not None:
            places.close(stopped=True)
        else:
            locks_back(run.vcs.name, run.project.root,
                       set(_lane_names(run).values()) | {lanes.serial_lane(_plan_key(run))})

    def run_group(self, group: str, tasks: list[TaskState], begun: list[TaskState]) -> None:
        """Run one group's tasks where it works; its working copy goes once they are done (a
        sequential run's one lane goes on to the next group instead)."""
        run = self.run
        if self.main is None:  # the checkout, the run's own VCS and tally
            # The checks of this group's tasks from here on and of every later group's.
            run_lane(run, tasks, begun, self._checks_first(group))
            return
        alone = run.options.parallel == 1
        if not alone:
            set_lane(group)
        serial = self._holder == group or \
            (alone and self._holder is None and group not in self._own)
        try:
            space, vcs = self._take_lane(group, tasks, serial)
        except BaseException:
            if serial:
                self._holder = group  # whatever the lane holds now, no other group resets it
            raise
        records = _records(tasks)
        try:
            # The lane's own list: the controller takes it.
            run_lane(self._lane_run(group, vcs, space.path), tasks, begun,
                     self._checks_first(group))
        except BaseException as exc:
            self._stopped(group, space, vcs, serial, isinstance(exc, CheckFailed),
                          _records(tasks) == records)
            raise
        # Every finished task is on the main line and saved: the lane has nothing left.
        if serial:
            self._holder = None
        if serial and alone:
            # The next group goes on there; carried before anything more is done, so that a
            # stop from here on finds it to close (close).
            self._carried = (space, vcs)
        self.main.forget(vcs.lane_commits)
        if serial and alone:
            return
        vcs.close()
        self._remove(space)

    def _lane_run(self, group: str, vcs: Lane, path: Path) -> Run:
        """The run as one group's lane sees it. One lane at a time keeps the run's own tally
        and its lines unprefixed: its limit waits are the run's, as in the checkout."""
        run = self.run
        if run.options.parallel == 1:
            return dataclasses.replace(run, vcs=vcs, workdir=path)
        return dataclasses.replace(run, vcs=vcs, workdir=path, lane=group,
                                   tally=Tally(planned=run.tally.planned,
                                               dropped=run.tally.dropped))

    def _stopped(self, group: str, space: lanes.Workspace, vcs: Lane, serial: bool,
                 checks_failed: bool, nothing_begun: bool) -> None:
        """What becomes of a group's lane when its tasks stopped (the caller raises on)."""
        alone = self.run.options.parallel == 1
        if checks_failed and not serial and not space.reused:
            # Several lanes at once, the run's first checks failed in this new lane before
            # any agent: it holds nothing, and goes as a finished lane does.
            try:
                vcs.close()
            finally:
                self._remove(space)
            return
        if serial and alone and nothing_begun:
            # Stopped before anything of this group began (--budget reached before its
            # first task): the lane holds only what earlier groups landed, and goes after
            # the last group as if the group had not come.
            self._carried = (space, vcs)
            return
        try:
            vcs.close()  # no error of its own in place of the group's (a lane gone)
        finally:
            if serial:
                self._holder = group  # kept as it is, for this group's next run
            keep_workspace(self.run.vcs.name, self.run.project.root, space)

    def _checks_first(self, group: str) -> FirstChecks:
        """The user's checks, run once before the run's first agent in the lane, where the
        tasks' checks will run (your last commit, with what --lane-copy, --lane-link and
        --lane-setup bring), not in your checkout: passing there on an ignored or uncommitted
        file the lane lacks, each task paid for every fix round and attempt of a check that
        could not pass. One lane at a time: this group's tasks and every later group's."""
        if self._first is not None:
            return self._first
        return FirstChecks([t for g in self.order[self.order.index(group):]
                            for t in self.groups[g]])

    def close(self, stopped: bool = False) -> None:
        """After the last lane: a sequential run's one lane removed, unless a group left
        something in it; the main line forgets its lanes' commits unless one is kept. The run
        `stopped` (Ctrl+C): that lane kept as a stop keeps any, for the next run. Either way,
        every other lane of the run gets back the lock of yours the run took off it (the sweep,
        to go on there) and has not put back: one it never came to, one a stop cut its making
        short, the one lane kept here; the lane removed puts back its own (teardown.clean_git)."""
        leaving = None
        try:
            if self._carried is not None:
                space, vcs = self._carried
                self._carried = None
                vcs.close()
                if not stopped:
                    leaving = space
            if stopped:
                return
            if isinstance(self.main, LandsOnABranch):
                self.main.settle()  # a checkout a lock left behind its branch follows, or is said
            if self.main is not None and not any(t.status in LEFT_OPEN
                                                 for t in self.run.state.tasks):
                self.main.forget_all()
            if self.main is None:
                self._sweep_left_lanes()
        finally:
            if self.main is not None:
                # Not the lane being removed: its removal reads your lock where the run keeps
                # it, and keeps that lane as it is (teardown.clean_git).
                locks_back(self.run.vcs.name, self.run.project.root,
                           (set(self.names.values()) | {self.serial})
                           - ({leaving.name} if leaving is not None else set()))
            if leaving is not None:
                # Last, removed beside the run's end (its last save, its closing lines' sums),
                # which waits for it before it says anything (agentloop.run.loop.lane_gone).
                assert self.main is not None  # only a run in lanes has one
                self.run.shared.leaving = removing_workspace(
                    self.run.vcs.name, self.run.project.root, leaving, _branch(self.main))

    def _sweep_left_lanes(self) -> None:
        """A run in your checkout that left no task open: the jj lanes an earlier run of this
        plan left (stopped there, run again here) hold nothing a task goes on from, and stayed
        registered, stale once this run took their attempt back, until a later run in lanes
        swept them. Swept now, only when a lane's folder is there (a look without a process):
        jj keeps their changes. A failure leaves them to that later run's sweep."""
        run = self.run
        if run.vcs.name != "jj" or any(t.status in LEFT_OPEN for t in run.state.tasks):
            return
        names = set(_lane_names(run).values()) | {lanes.serial_lane(_plan_key(run))}
        folder = lanes.lanes_dir(run.project.root)
        if not any((folder / name).exists() for name in names):
            return
        try:
            sweep_workspaces("jj", run.project.root, set(), names)
        except VcsError:
            pass

    def _take_lane(self, group: str, tasks: list[TaskState], serial: bool
                   ) -> tuple[lanes.Workspace, Lane]:
        """The group's working copy, opened and prepared: the sequential run's one lane as the
        group before left it (brought to the main line's tip), or one opened now."""
        if serial and self._carried is not None:
            space, vcs = self._carried
            try:
                vcs.follow()
            except Exception:
                self._carried = None  # the group's error: its lane stays as it is (run_group)
                raise
            # Carried until now: a stop inside the follow leaves the lane for close to close.
            self._carried = None
            return space, vcs
        # A group with an attempt still open (a killed run) goes on in the working copy it
        # left, where that attempt's record is; any other starts from the main line as it is.
        fresh = not any(t.status in LEFT_OPEN for t in tasks)
        name = self.serial if serial else self.names[group]
        space, vcs = self._open_lane(name, fresh, adopt=not serial)
        if space.note:
            self.run.emit(LaneNote(space.note))
        # What the lane's prepare did (a killed run's attempt rolled back, and where it is kept)
        # is said as your checkout's is, but as the lane's line: the run's first lines are out.
        for note in vcs.prepare():
            self.run.emit(LaneNote(note))
        furnish_lane(self.run, space)
        return space, vcs

    def _remove(self, space: lanes.Workspace) -> None:
        assert self.main is not None  # only a run in lanes removes one
        for note in remove_workspace(self.run.vcs.name, self.run.project.root, space,
                                     _branch(self.main)):
            self.run.emit(LaneNote(note))

    def _open_lane(self, name: str, fresh: bool, adopt: bool = True
                   ) -> tuple[lanes.Workspace, Lane]:
        """The lane's working copy and its VCS: a git worktree or a jj workspace."""
        root, kind, main = self.run.project.root, self.run.vcs.name, self.main
        assert main is not None  # only a run in lanes opens one
        task_file = self.run.project.task_file
        rel = relative_to(task_file, root) or task_file.name
        # A lane an older version left under the bare name (a conflicted task's work) is
        # adopted, never dropped.
        old = name.removeprefix(_plan_key(self.run) + "-") if adopt else ""
        old = self._older.get(name, old)
        with self._taking:
            listed, self._listed = self._listed, None
        space = open_workspace(kind, root, name, main.tip(), fresh, adopt=old, main=main,
                               listed=listed)
        return space, open_lane(kind, main, space.path, space.path / rel, space.branch,
                                made=not space.reused)


def _records(tasks: list[TaskState]) -> list[tuple[str, int]]:
    # What a group's records say of it: unchanged, the group began nothing in its lane.
    return [(t.status, len(t.history)) for t in tasks]


def _waits(run: Run, files: list[str], since: float, line: str) -> None:
    """A landing waits on the user's edits (in the lane's thread): said, and handed to the
    controller for the waiting task's record, which --status shows."""
    run.emit(LandingWaits(tuple(files), since, line))
    group = lane()
    for task in run.state.tasks:
        if task.status == S.RUNNING and task.group == (group or task.group):
            hand(run, task, Waiting(line))


def _plan_key(run: Run, released: bool = False) -> str:
    """The key every lane of the run's plan carries: another plan's run never resets or
    deletes them, nor the same plan's in another checkout of the repository
    (lanes.linked_checkout). Read once a run (Shared.lane_key): the checkout's id comes from
    its `.git` file, which you or an agent may rewrite while the run works, and one run's lanes
    have one key. `released`: the key the released version gave, the same in every checkout."""
    plan = relative_to(run.project.task_file, run.project.root) or run.project.task_file.name
    if released:
        return lanes.plan_key(plan)
    if run.shared.lane_key is None:
        run.shared.lane_key = lanes.plan_key(plan, lanes.linked_checkout(run.project.root))
    return run.shared.lane_key


def _released_names(run: Run, names: set[str]) -> dict[str, str]:
    """In a linked checkout (git), the lanes of `names` that the released version made here
    under the name the main checkout's lanes have: name -> that name. Found by their files in
    this checkout's lanes folder, on their branch: the main checkout's own lane of that name
    is elsewhere, and never taken."""
    key, old = _plan_key(run), _plan_key(run, released=True)
    if run.vcs.name != "git" or key == old:
        return {}
    found = {name: old + name.removeprefix(key) for name in names}
    return {n: o for n, o in found.items() if lanes.lane_on_branch(run.project.root, o)}


def _lane_names(run: Run) -> dict[str, str]:
    order = list(dict.fromkeys(t.group for t in run.state.tasks))
    key = _plan_key(run)
    return {g: lanes.plan_lane(key, n, g) for n, g in enumerate(order, 1)}


def _holder(run: Run, names: dict[str, str], older: dict[str, str]) -> str | None:
    """The group whose leftover (an attempt a kill cut short, a conflict, a held landing) a
    sequential run's one lane holds: the first with one and no lane of its own (under its name,
    or the bare name an older version gave it). Its files alone tell: no process."""
    key, root, kind = _plan_key(run), run.project.root, run.vcs.name
    for group in dict.fromkeys(t.group for t in run.state.tasks if t.status in LEFT_OPEN):
        name = names[group]
        if not has_lane(kind, root, name) and name not in older and \
                not has_lane(kind, root, name.removeprefix(key + "-")):
            return group
    return None


def serialised(emit: Emit, lock: threading.RLock) -> Emit:
    """One event at a time, whichever lane emits it; a lane's event names its lane."""
    def locked(event: Event) -> None:
        group = lane()
        if group and getattr(event, "lane", None) == "":
            event = dataclasses.replace(event, lane=group)  # type: ignore[arg-type]
        with lock:
            emit(event)
    return locked


def _branch(main: object) -> str:
    """The branch a main line lands on (git's); HEAD where it moves none (jj's)."""
    return main.ref if isinstance(main, LandsOnABranch) else "HEAD"
