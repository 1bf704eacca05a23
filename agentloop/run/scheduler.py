"""Which groups run now: up to --parallel K lanes at once, one per group, each in a working copy
of its own (agentloop.vcs.lanes), its tasks landing on the main line as they finish.

pytest-xdist's model: lanes run in threads and only report (their events, and one message when
they end); this loop, in the main thread, owns what runs next, and it alone hears Ctrl+C. State
is one object, saved under one lock (Run.save), so no lane keeps a copy of its own.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from pathlib import Path
from typing import Callable, Union

from agentloop.errors import Interrupted, VcsError
from agentloop.proc import commands, running
from agentloop.proc.signals import shielded
from agentloop.run.conflicts import GroupConflicted
from agentloop.run.context import Run, Tally
from agentloop.run.events import Emit, Event
from agentloop.run.lane import run_lane
from agentloop.run.lane_tag import LaneNote, lane, set_lane
from agentloop.run.verify import baseline
from agentloop.state.schema import TaskState
from agentloop.vcs import lanes, relative_to
from agentloop.vcs.check import LaneBreach
from agentloop.vcs.git import worktrees
from agentloop.vcs.git.lane import LaneGit
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.jj import workspaces
from agentloop.vcs.jj.lane import LaneJj
from agentloop.vcs.jj.mainline import JjMainLine
from agentloop.vcs.landing import LandingHeld

MainLine = Union[GitMainLine, JjMainLine]

# A file the controller looks for between reports: start no new task, let running ones finish.
STOP_FILE = "stop-after-running"
POLL_SECONDS = 0.5
DONE = ("completed", "skipped")


def run_parallel(run: Run, pending: list[TaskState], begun: list[TaskState]) -> None:
    """Run the pending tasks' groups, up to --parallel at once, in file order."""
    if run.vcs.name not in ("git", "jj"):
        raise VcsError(f"--parallel needs git or jj, not {run.vcs.name}")
    running.clear()
    stop_flag(run.project.store.dir).unlink(missing_ok=True)  # a request older than this run
    emit = _serialised(run.emit, run.shared.lock)
    run = dataclasses.replace(run, emit=emit)
    groups = _groups(pending)
    names = _lane_names(run)
    said: Callable[[str], None] = lambda text: emit(LaneNote(text))
    main: MainLine = (GitMainLine.current(run.project.root, on_wait=said,
                                          stopping=running.stopping)
                      if run.vcs.name == "git" else
                      JjMainLine(run.project.root, on_wait=said, stopping=running.stopping))
    if groups:
        baseline(run, pending)  # the user's checks, once, in the main checkout
    keep = {names[g] for g in groups}
    if run.vcs.name == "git":
        worktrees.sweep_git(run.project.root, keep, known=set(names.values()))
        # Lanes of groups with nothing left to run (a run killed before it cleaned up): every
        # task of theirs that finished is on the main line; anything else is kept, and said.
        for note in worktrees.drop_branches(run.project.root, set(names.values()) - keep,
                                            getattr(main, "ref", "HEAD")):
            emit(LaneNote(note))
    else:
        workspaces.sweep_jj(run.project.root, keep, known=set(names.values()))
    _control(run, main, groups, names, begun)
    if not any(t.status in ("running", "interrupted", "conflicted") for t in run.state.tasks):
        main.forget_all()


def _control(run: Run, main: MainLine, groups: dict[str, list[TaskState]],
             names: dict[str, str], begun: list[TaskState]) -> None:
    """The controller's loop: start lanes while there is room, collect their reports."""
    reports: queue.Queue[tuple[str, BaseException | None]] = queue.Queue()
    lanes: dict[str, threading.Thread] = {}
    todo, first_error = list(groups), None
    breach: LaneBreach | LandingHeld | None = None
    try:
        while todo or lanes:
            while len(lanes) < run.options.parallel and not run.shared.halted():
                group = next((g for g in todo if _ready(run, g)), None)
                if group is None:
                    break
                todo.remove(group)
                lanes[group] = threading.Thread(
                    target=_lane, name=f"lane {group}", daemon=True,
                    args=(run, main, group, names[group], groups[group], begun, reports))
                lanes[group].start()
            if not lanes:
                _say_waiting(run, todo)
                break
            try:
                group, error = reports.get(timeout=POLL_SECONDS)
            except queue.Empty:
                _look_for_stop(run)
                continue
            lanes.pop(group).join()
            if isinstance(error, GroupConflicted):
                continue  # that group stops, its work kept; the others go on
            if isinstance(error, (LaneBreach, LandingHeld)):
                # The agent did something outside its task, or a landing waited past the
                # lane wait: that group stops, nothing of the step landed, its work kept on
                # its lane; the others go on; the run ends with the line that says so.
                run.emit(LaneNote(f"{group} stopped: {error}"))
                breach = breach or error
                continue
            if error is not None:
                first_error = first_error or error
                run.shared.halt()  # no new task anywhere; running ones finish
    except BaseException as exc:
        # Ctrl+C (only this thread hears it), or a fault of the controller's own: stop every
        # lane's agent, wait for each lane to drop its interrupted attempt and save, then stop.
        run.shared.halt()
        with shielded():
            for agent in running.stop_all():
                commands.stop_group(agent)
            for worker in lanes.values():
                worker.join()
        running.clear()  # every lane has stopped: a later run in this process starts afresh
        if isinstance(exc, (KeyboardInterrupt, Interrupted)):
            raise Interrupted("interrupted") from None
        raise
    if first_error is not None:
        raise first_error
    if breach is not None:
        raise breach


def _lane(run: Run, main: MainLine, group: str, name: str, tasks: list[TaskState],
          begun: list[TaskState], reports: queue.Queue[tuple[str, BaseException | None]]) -> None:
    """One lane's thread: its working copy, its tasks in order, then its report."""
    set_lane(group)
    try:
        # A group with an attempt still open (a killed run) goes on in the working copy it
        # left, where that attempt's record is; any other starts from the main line as it is.
        fresh = not any(t.status in ("running", "interrupted", "conflicted") for t in tasks)
        space, vcs = _open_lane(run, main, name, fresh)
        vcs.prepare()
        own = dataclasses.replace(run, vcs=vcs, workdir=space.path, lane=group,
                                  tally=Tally(planned=run.tally.planned))
        mine: list[TaskState] = []
        try:
            run_lane(own, tasks, mine, checks_first=False)
        finally:
            with run.shared.lock:
                begun.extend(mine)
            vcs.close()
        # Every finished task is on the main line and saved: the lane has nothing left.
        main.forget(vcs.lane_commits)
        if isinstance(vcs, LaneGit):
            for note in worktrees.remove_git(run.project.root, space, drop_branch=True,
                                             main=getattr(main, "ref", "HEAD")):
                run.emit(LaneNote(note))
        else:
            workspaces.remove_jj(run.project.root, space)
        reports.put((group, None))
    except BaseException as exc:
        reports.put((group, exc))


def _ready(run: Run, group: str) -> bool:
    """Whether every group `group` waits for has all its tasks on the main line."""
    needs = set(run.state.depends.get(group, ()))
    return all(t.status in DONE for t in run.state.tasks if t.group in needs)


def _say_waiting(run: Run, todo: list[str]) -> None:
    for group in todo:
        waits = [g for g in run.state.depends.get(group, ())
                 if any(t.group == g and t.status not in DONE for t in run.state.tasks)]
        if waits:
            run.emit(LaneNote(f"{group} did not start: it waits for {', '.join(waits)}, "
                              "which did not finish"))


def _open_lane(run: Run, main: MainLine, name: str, fresh: bool
               ) -> tuple[lanes.Workspace, LaneGit | LaneJj]:
    """The lane's working copy and its VCS: a git worktree or a jj workspace."""
    root = run.project.root
    rel = relative_to(run.project.task_file, root) or run.project.task_file.name
    if isinstance(main, GitMainLine):
        # A lane an older version left under the bare name (a conflicted task's work) is
        # adopted, never dropped.
        old = name.removeprefix(lanes.plan_key(rel) + "-")
        space = worktrees.open_git(root, name, main.tip(), fresh, adopt=old)
        return space, LaneGit(space.path, space.path / rel, main)
    space = workspaces.open_jj(root, name, main.tip(), fresh)
    return space, LaneJj(space.path, space.path / rel, main, space.branch)


def _groups(pending: list[TaskState]) -> dict[str, list[TaskState]]:
    groups: dict[str, list[TaskState]] = {}
    for task in pending:
        groups.setdefault(task.group, []).append(task)
    return groups


def _lane_names(run: Run) -> dict[str, str]:
    order = list(dict.fromkeys(t.group for t in run.state.tasks))
    # Every plan's lanes carry its key: another plan's run never resets or deletes them.
    key = lanes.plan_key(relative_to(run.project.task_file, run.project.root)
                         or run.project.task_file.name)
    return {g: lanes.plan_lane(key, n, g) for n, g in enumerate(order, 1)}


def _look_for_stop(run: Run) -> None:
    flag = run.project.store.dir / STOP_FILE
    if flag.exists() and not run.shared.halted():
        run.shared.halt()
        run.emit(LaneNote("stopping after the running tasks: no new task starts"))
        try:
            flag.unlink()
        except OSError:
            pass


def stop_flag(store_dir: Path) -> Path:
    """Where `--stop-after-running` leaves its request for a running parallel run."""
    return store_dir / STOP_FILE


def _serialised(emit: Emit, lock: threading.RLock) -> Emit:
    """One event at a time, whichever lane emits it; a lane's event names its lane."""
    def locked(event: Event) -> None:
        group = lane()
        if group and getattr(event, "lane", None) == "":
            event = dataclasses.replace(event, lane=group)  # type: ignore[arg-type]
        with lock:
            emit(event)
    return locked

