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
from typing import Any

from agentloop.errors import VcsError
from agentloop.proc import running
from agentloop.run.context import Run, Tally
from agentloop.run.decisions import Waiting
from agentloop.run.events import Emit, Event, LandingWaits
from agentloop.run.handover import hand
from agentloop.run.lane import run_lane
from agentloop.run.lane_tag import LaneNote, lane, set_lane
from agentloop.run.verify import baseline
from agentloop.run.workplace import furnish_lane, in_lanes
from agentloop.state.schema import TaskState
from agentloop.state.status import OPEN
from agentloop.state.status import TaskStatus as S
from agentloop.vcs import Vcs, lanes, relative_to
from agentloop.vcs.choose import (
    MainLine,
    open_lane,
    open_main_line,
    open_workspace,
    remove_workspace,
    sweep_workspaces,
)

# Statuses of a group's task that keep its working copy (an attempt a killed run left open, a
# change kept for a person, one held by the user's edits): the next run goes on there.
LEFT_OPEN = OPEN | {S.CONFLICTED, S.HELD}


class Workplaces:
    """Where each group of one run works; `run_group` runs a group's tasks there."""

    def __init__(self, run: Run, main: MainLine | None, names: dict[str, str],
                 groups: dict[str, list[TaskState]], listed: Any = None) -> None:
        self.run, self.main, self.names, self.groups = run, main, names, groups
        self.order = list(groups)
        # The working copies the sweep listed, for the first lane opened (no other has been
        # added or removed before it); later ones ask again.
        self._listed = listed
        self._taking = threading.Lock()

    @classmethod
    def open(cls, run: Run, groups: dict[str, list[TaskState]]) -> "Workplaces":
        """The run's workplaces: the checkout, or (lanes) the main line, the user's checks run
        once in the main checkout, and the lanes a killed run left swept."""
        if run.options.parallel == 1 and not in_lanes(run):
            return cls(run, None, {}, groups)
        if run.vcs.name not in ("git", "jj"):
            raise VcsError(f"--parallel needs git or jj, not {run.vcs.name}")
        said = lambda text: run.emit(LaneNote(text))  # noqa: E731
        main = open_main_line(run.vcs.name, run.project.root, on_wait=said,
                              stopping=running.stopping, wait_limit=run.options.lane_wait,
                              checkout=run.vcs)
        main.on_waits = partial(_waits, run)
        names = _lane_names(run)
        pending = [t for tasks in groups.values() for t in tasks]
        if groups:
            baseline(run, pending)  # the user's checks, once, in the main checkout
        keep = {names[g] for g in groups}
        # Lanes of groups with nothing left to run (a run killed before it cleaned up): every
        # task of theirs that finished is on the main line; anything else is kept, and said.
        swept = sweep_workspaces(run.vcs.name, run.project.root, keep, set(names.values()),
                                 getattr(main, "ref", "HEAD"))
        for note in swept.notes:
            run.emit(LaneNote(note))
        return cls(run, main, names, groups, swept.listed)

    def run_group(self, group: str, tasks: list[TaskState], begun: list[TaskState]) -> None:
        """Run one group's tasks where it works; its working copy goes once they are done."""
        run = self.run
        if self.main is None:  # the checkout, the run's own VCS and tally
            # The checks of this group's tasks from here on and of every later group's.
            later = self.order[self.order.index(group):]
            run_lane(run, tasks, begun, [t for g in later for t in self.groups[g]])
            return
        alone = run.options.parallel == 1
        if not alone:
            set_lane(group)
        # A group with an attempt still open (a killed run) goes on in the working copy it
        # left, where that attempt's record is; any other starts from the main line as it is.
        fresh = not any(t.status in LEFT_OPEN for t in tasks)
        space, vcs = self._open_lane(self.names[group], fresh)
        vcs.prepare()
        furnish_lane(run, space)
        # One lane at a time keeps the run's own tally and its lines unprefixed: its limit
        # waits are the run's, as in the checkout.
        own = dataclasses.replace(run, vcs=vcs, workdir=space.path, lane=group) if not alone \
            else dataclasses.replace(run, vcs=vcs, workdir=space.path)
        if not alone:
            own = dataclasses.replace(own, tally=Tally(planned=run.tally.planned,
                                                       dropped=run.tally.dropped))
        try:
            run_lane(own, tasks, begun)  # the lane's own list: the controller takes it after
        finally:
            vcs.close()
        # Every finished task is on the main line and saved: the lane has nothing left.
        self.main.forget(getattr(vcs, "lane_commits", []))
        for note in remove_workspace(run.vcs.name, run.project.root, space,
                                     getattr(self.main, "ref", "HEAD")):
            run.emit(LaneNote(note))

    def close(self) -> None:
        """After the last lane: the main line forgets its lanes' commits unless one is kept."""
        if self.main is not None and not any(t.status in LEFT_OPEN
                                             for t in self.run.state.tasks):
            self.main.forget_all()

    def _open_lane(self, name: str, fresh: bool) -> tuple[lanes.Workspace, Vcs]:
        """The lane's working copy and its VCS: a git worktree or a jj workspace."""
        root, kind, main = self.run.project.root, self.run.vcs.name, self.main
        assert main is not None  # only a run in lanes opens one
        task_file = self.run.project.task_file
        rel = relative_to(task_file, root) or task_file.name
        # A lane an older version left under the bare name (a conflicted task's work) is
        # adopted, never dropped.
        old = name.removeprefix(lanes.plan_key(rel) + "-")
        with self._taking:
            listed, self._listed = self._listed, None
        space = open_workspace(kind, root, name, main.tip(), fresh, adopt=old, main=main,
                               listed=listed)
        return space, open_lane(kind, main, space.path, space.path / rel, space.branch,
                                made=not space.reused)


def _waits(run: Run, files: list[str], since: float, line: str) -> None:
    """A landing waits on the user's edits (in the lane's thread): said, and handed to the
    controller for the waiting task's record, which --status shows."""
    run.emit(LandingWaits(tuple(files), since, line))
    group = lane()
    for task in run.state.tasks:
        if task.status == S.RUNNING and task.group == (group or task.group):
            hand(run, task, Waiting(line))


def _lane_names(run: Run) -> dict[str, str]:
    order = list(dict.fromkeys(t.group for t in run.state.tasks))
    # Every plan's lanes carry its key: another plan's run never resets or deletes them.
    key = lanes.plan_key(relative_to(run.project.task_file, run.project.root)
                         or run.project.task_file.name)
    return {g: lanes.plan_lane(key, n, g) for n, g in enumerate(order, 1)}


def serialised(emit: Emit, lock: threading.RLock) -> Emit:
    """One event at a time, whichever lane emits it; a lane's event names its lane."""
    def locked(event: Event) -> None:
        group = lane()
        if group and getattr(event, "lane", None) == "":
            event = dataclasses.replace(event, lane=group)  # type: ignore[arg-type]
        with lock:
            emit(event)
    return locked
