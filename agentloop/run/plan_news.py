"""The plan read again while a run works: what a person's edit of the plan, made mid-run, means for
a task about to start.

A person may edit the plan while agents work: remove a task, tick it, reword it, move it under
another heading, or rename or delete the file (an agent's `jj undo` does that too). Between tasks
the controller (agentloop.run.controller) asks here whether the next task may start: the plan is
read again (only when its stamp says it may have changed, and parsed only when its SHA-256
changed), matched to the records as a new run would match them (agentloop.state.reconcile), and
its news kept in one PlanNews. A removed, ticked or moved task does not start; a reworded one
runs its new wording. What was done is said as it happens and kept for the closing lines
(agentloop.run.loop). Records change through the ledger only, called from the controller's thread.
"""

from __future__ import annotations

import os
import time
from dataclasses import field
from pathlib import Path

from agentloop.errors import AgentLoopError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.plan import parse
from agentloop.run import ledger, plan_kept
from agentloop.run.context import Run
from agentloop.run.lane_tag import LaneNote
from agentloop.state.reconcile import reconcile
from agentloop.state.schema import TaskState
from agentloop.state.status import SETTLING
from agentloop.state.status import TaskStatus as S

# Older than this, a file's change time tells every later edit apart (FAT counts in 2 s).
RACY_NS = 3_000_000_000

# What tells a file's content changed without reading it (_stamp).
Stamp = tuple[int, int, int, int, int]


@dataclass
class PlanNews:
    """What the user changed in the plan while the run worked, as the controller read it."""

    removed: set[str] = field(default_factory=set)      # log names of tasks no longer there
    # Of those, tasks to do under a renamed heading (reconcile's `moved`): the new group's name.
    moved: dict[str, str] = field(default_factory=dict)
    ticked: set[str] = field(default_factory=set)
    # The old log name: the new text, summary and log name, and whether the words are alike
    # (a reword), or another task was put where it stood (it was deleted, one added there).
    reworded: dict[str, tuple[str, str, str, bool]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)     # the closing lines, as they happened
    # The task a line of `notes` that begins `task N` names (its number in the run), by the
    # line: the closing lines name it as the plan reads at the run's end (names_now.Names).
    named: dict[str, int] = field(default_factory=dict)
    when: str = plan_kept.WORKED   # when the last change read was written (plan_kept.when)
    # The plan file's stamp when it was last read and understood (see _settled): while the
    # file still bears it, it is not read again.
    seen: Stamp | None = None


def opened(run: Run) -> PlanNews:
    """The plan as a run starts: no news yet, its bytes kept in case it vanishes
    (agentloop.run.plan_kept)."""
    # The plan as the controller last read it; a tick of agent-loop's moves it too
    # (agentloop.run.tick_boxes), so that edit is no news.
    run.shared.plan_hash = run.state.task_file_hash
    news = PlanNews()
    read(run, news)
    return news


def allows(run: Run, news: PlanNews, task: TaskState) -> bool:
    """Whether the plan, read again now, still lets `task` start: not once it was removed,
    ticked or moved under another heading, nor once the plan itself was renamed; a reworded
    task takes its new wording first."""
    read(run, news)
    if run.shared.halted():
        return False   # the plan was renamed meanwhile (agentloop.run.plan_kept)
    group = news.moved.get(task.log_name)
    if group is not None:
        # Still the plan's, pending: not carried to another group (its session is its old
        # group's), so the next run takes it there.
        _said(run, news, task, f'task "{task.summary}" moved under the heading "{group}" '
                               f"{news.when}: not started by this run (a task to do "
                               "starts afresh under its new heading); it stays in the plan, "
                               "pending, for the next run")
        run.tally.dropped.add(task.index)
        return False
    if task.log_name in news.removed:
        # By its words: the plan has no number for it now, and its old one names another.
        _said(run, news, task, f'task "{task.summary}" was removed from the plan '
                               f"{news.when}: not started")
        run.tally.dropped.add(task.index)
        return False
    if task.log_name in news.ticked and task.status != S.SKIPPED:
        # Kept off the main line by an earlier run: its commit is not landed now either.
        kept = task.change_id if task.status in SETTLING and task.change_id else ""
        ledger.skip(task)
        ledger.save(run, task)
        _said(run, news, task, f"task {run.shared.number(task)} ({task.summary}) was ticked "
                               f"in the plan {news.when}: skipped"
                               + (f", its kept commit {kept[:12]} not landed" if kept else ""),
              named=True)
        return False
    wording = news.reworded.pop(task.log_name, None)
    if wording is not None:
        text, summary, log_name, alike = wording
        was = task.summary
        ledger.reword(task, text, summary, log_name)
        ledger.save(run, task)
        # Paired as an edit either way (reconcile: it runs now, and names the old change);
        # words with nothing alike are said as what the person did.
        how = ("was reworded" if alike else
               f"({was}) was removed and another task put in its place")
        # Numbered as the plan just read, which the live lines name it by.
        _said(run, news, task, f"task {run.shared.number(task)} {how} {news.when}: it "
                               f"runs as it reads now ({task.summary})", named=True)
    return True


def _said(run: Run, news: PlanNews, task: TaskState, text: str, named: bool = False) -> None:
    """Say `text` now and keep it for the closing lines."""
    news.notes.append(text)
    if named:  # `task N …`: the closing line names it as the plan reads at the run's end
        news.named[text] = task.index
    run.emit(LaneNote(text))


def read(run: Run, news: PlanNews) -> None:
    """What the user changed in the plan since the controller last looked: removed, ticked
    and reworded tasks, matched to the records as a new run would match them."""
    path = run.project.task_file
    seen = _stamp(path)
    if seen is not None and seen == news.seen:
        return  # the file read last time, unchanged since (plan_kept has its bytes)
    news.seen = None
    # The file read (stat before the read: replaced between, the next look reads again).
    file = None if seen is None else (seen[0], seen[1])
    try:
        data = parse.read_bytes(path)
        digest = parse.file_hash(data)
        if digest == run.shared.plan_hash:
            plan_kept.keep(run, data, file)
            news.seen = _settled(seen)
            return
        run.shared.plan_hash = digest
        changes = reconcile(run.state.tasks, parse.from_bytes(path, data, emptied=True))
    except AgentLoopError:
        # Gone (an agent's `jj undo`): put back. Else a plan half saved, or broken for a
        # moment: the run goes on as it was.
        restored = plan_kept.restore(run)
        if restored is not None:
            moved = restored.moved
            if restored.name:
                ledger.plan_renamed(run, restored.name)
            if moved:
                run.shared.halt()  # the plan is the renamed file's now: its run's
                news.notes.append(restored.note)
            elif restored.name:   # put back after its rename was said: that line is not so
                plan_kept.said_back(run, news.notes)
                news.notes.append(restored.note)
            run.emit(LaneNote(restored.note, stop=moved))
        return
    plan_kept.keep(run, data, file)
    news.when = plan_kept.when(run, path)
    news.removed = {r.log_name for r in changes.removed}
    news.moved = {old: changes.tasks[new - 1].group for old, new in changes.moved}
    # The live lines from now name each task as the plan reads now (what the user sees).
    run.shared.plan_numbers = {t.log_name: t.index for t in changes.tasks}
    run.shared.plan_groups = {t.log_name: t.group for t in changes.tasks}
    news.ticked = {changes.tasks[i - 1].log_name for i in changes.ticked}
    from agentloop.state.rewording import alike  # loaded by the reconcile of an edit

    news.reworded = {
        old.log_name: (changes.tasks[new - 1].task, changes.tasks[new - 1].summary,
                       changes.tasks[new - 1].log_name, alike(changes.tasks[new - 1], old))
        for old, (new, _) in zip(changes.replaced, changes.edited)}


def _stamp(path: Path) -> Stamp | None:
    """What tells a file's content changed without reading it: its device and inode (which
    file it is: agentloop.run.plan_kept), size, and the times of its last write and last
    change of any kind; None when it cannot be looked at."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _settled(stamp: Stamp | None) -> Stamp | None:
    """`stamp`, taken before a read, when a later edit is sure to change it: its last change
    lies further back than any file system's clock is coarse (git's "racy" rule), else None
    (the file is read again next time). An edit a moment after a read could otherwise carry
    the same times on a file system that counts in whole seconds."""
    if stamp is None or time.time_ns() - stamp[-1] < RACY_NS:
        return None
    return stamp
