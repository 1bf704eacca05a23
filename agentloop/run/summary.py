"""How a run ended, as data: counts, spending, stalls, and the tasks it left unfinished."""

from __future__ import annotations

from collections import Counter

from agentloop.errors import INTERNAL_EXIT, UNFINISHED_EXIT, AgentLoopError, Interrupted
from agentloop.plan import parse
from agentloop.run import ledger, plan_kept
from agentloop.run.context import Run
from agentloop.run.events import RunFinished
from agentloop.run.names_now import Names
from agentloop.state import receipts
from agentloop.state.reconcile import reconcile, reworded_lines
from agentloop.state.schema import TaskState
from agentloop.state.status import FINISHED
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.protocol import LandsOnABranch

# Runs of the tool in a row a task may start without completing before the summary flags it.
STALL_RUNS = 3
# What a task the run set out to run may end as, for the run to count as a success.


def count_stalls(run: Run, begun: list[TaskState], names: Names) -> tuple[str, ...]:
    """Count the runs each started task has gone without completing; report the stuck ones,
    named as the plan reads now (`names`)."""
    ledger.stalls(run, begun)
    try:
        ledger.save(run)
    except AgentLoopError:
        pass
    return tuple(
        f"{names(t.index)} has started in {t.stalled_runs} runs in a row without completing "
        f"({t.status}: {t.error or 'no reason recorded'}); read "
        f"{run.project.shown(t.log or '')} and consider "
        "rewording or splitting it"
        for t in run.state.tasks if t.stalled_runs >= STALL_RUNS)


def counted(tasks: list[TaskState]) -> tuple[tuple[str, int], ...]:
    """The tasks by status, as the closing count says them (`--status` counts the same)."""
    return tuple(sorted(Counter(str(t.status) for t in tasks).items()))


def summarize(run: Run, started: float, stopped: str | None, notes: tuple[str, ...],
              planned: list[int], names: Names) -> RunFinished:
    """The RunFinished event: counts by status, tokens and cost, time, what to look at; the
    tasks named, and counted, as the plan reads now (`names`: an edit the run took in may have
    renumbered them, or removed a task that ran, said apart by its words)."""
    tasks = run.state.tasks
    unapproved: tuple[str, ...] = ()
    if any(t.status == S.UNAPPROVED for t in tasks):  # the review's module: a run that had one
        from agentloop.run.review import unapproved_notes

        unapproved = unapproved_notes(run.state, names)
    # A task the run did not start for its removal, and the plan has still (put back since),
    # is counted as the plan has it, not as removed.
    removed = tuple(sorted(i for i in run.tally.dropped if not names.kept(i)))
    ours = [t for t in tasks if t.index not in removed]
    counts = counted(ours) if names.counts is None else tuple(sorted(names.counts.items()))
    total = receipts.of_state(run.state)
    unfinished = tuple(i for i in planned if tasks[i - 1].status not in FINISHED)
    # A change you took back while the run worked (`jj abandon`) is no landed task: said again
    # below, and no undo line names it.
    back = run.shared.taken_back
    completed = tuple(i for i in planned if tasks[i - 1].status == S.COMPLETED
                      and tasks[i - 1].change_id and i not in back)
    last = completed[-1] if completed else 0
    return RunFinished(counts=counts,
                       tokens=tuple((k, getattr(total, k)) for k in receipts.TOKENS),
                       cost_usd=total.cost_usd,
                       seconds=run.clock.monotonic() - started,
                       logs=str(run.project.store.logs),
                       stopped=stopped,
                       notes=notes + unapproved
                       + tuple(names.within(line, i) for i, line in sorted(back.items()))
                       + (_empty_notes(run, planned, names) + _kept_notes(run, planned, names)
                          if run.vcs.name != "none" else ())
                       + _grown_notes(run, completed),
                       unfinished=unfinished, cost_known=total.cost_known,
                       completed=completed, removed=removed,
                       landed_on=_landed_on(run) if completed else "",
                       last_change=tasks[last - 1].change_id or "" if last else "",
                       # The run's own numbers stay in `unfinished` and `completed`, as in the
                       # run's other events; these name the tasks as `--status` does.
                       unfinished_now=tuple(n for i in unfinished
                                            if (n := names.number(i)) is not None),
                       unfinished_removed=tuple(tasks[i - 1].summary for i in unfinished
                                                if not names.kept(i)),
                       last_named=("" if not last else f"task {names.number(last)}"
                                   if names.kept(last) else f'"{tasks[last - 1].summary}"'),
                       removed_since=tuple((t.summary, str(t.status)) for t in ours
                                           if not names.kept(t.index)),
                       taken_back=sum(1 for i in back if tasks[i - 1].status == S.COMPLETED
                                      and names.kept(i)))


def _landed_on(run: Run) -> str:
    """The branch a run in lanes landed its tasks on, when your checkout is on another one now
    (you switched mid-run): the closing undo line names it, or its `git revert` would go to
    the wrong branch. Read from the git dir's files (no process) in the common case."""
    main_line = run.shared.main_line
    if not isinstance(main_line, LandsOnABranch):  # jj's lanes move no branch
        return ""
    try:
        ref = main_line.elsewhere()
    except AgentLoopError:
        return ""
    return ref.removeprefix("refs/heads/") if ref else ""


def _empty_notes(run: Run, planned: list[int], names: Names) -> tuple[str, ...]:
    """Tasks this run completed without changing a file: done, or only said to be? A completed
    task's note is said too: what the agent did to your checkout (`task N: ...`, kept by
    agentloop.run.lane), or instead, what it wrote inside a submodule
    (agentloop.run.submodule_files), which says where its files are."""
    tasks = run.state.tasks
    notes: list[str] = []
    for i in planned:
        task = tasks[i - 1]
        if task.status != S.COMPLETED:
            continue
        if task.error:   # said with the run's number of the task
            notes.append(names.within(task.error, i))
        if not task.files and not task.change_id and task.error in (None, task.aside):
            notes.append(f"{names(i)} completed but changed no files; read "
                         f"{run.project.shown(task.log or '')} "
                         "(--require-changes fails such a task)")
    return tuple(notes)


def _kept_notes(run: Run, planned: list[int], names: Names) -> tuple[str, ...]:
    """Tasks this run did not complete whose attempts wrote inside a submodule in a lane: their
    files are kept (agentloop.run.submodule_files), said when the attempt ended, and here once
    more, where a person reading the last lines looks. A `stat` a task not completed."""
    from agentloop.run.submodule_files import kept_dir

    tasks = run.state.tasks
    return tuple(f"{names(i)}'s attempts wrote files inside a submodule, which no task's commit "
                 f"holds: they are kept in {run.project.shown(kept_dir(run, i))}/"
                 for i in planned if tasks[i - 1].status != S.COMPLETED
                 and kept_dir(run, i).is_dir())


def _grown_notes(run: Run, completed: tuple[int, ...] = ()) -> tuple[str, ...]:
    """Tasks added to the task file (or reworded) while this run worked: they run next time,
    which a run that says "done" must not leave unsaid. An agent ticking boxes is no news.
    And tasks this run `completed` whose lines are gone from it now."""
    path = plan_kept.current(run)   # renamed while the run worked: read where it went
    shown = run.project.shown(path)
    if run.shared.plan_left and not path.exists():
        return ()   # gone with your switch to another branch, unchanged there (plan_kept)
    try:
        data = parse.read_bytes(path)
        if parse.file_hash(data) == run.state.task_file_hash:
            return ()
        # Read as the next run will: a finished task reworded meanwhile stays done. Words
        # with no task left are a plan whose every task was deleted, not a broken file.
        plan = parse.from_bytes(path, data, emptied=True)
        changes = reconcile(run.state.tasks, plan)
    except AgentLoopError as exc:
        return (f"{shown} changed while this run worked and cannot be read now: "
                f"{exc}",)
    if not plan.tasks:
        return (f"{shown} has no tasks now: every task was removed from it while this run "
                "worked",) + _removed_but_landed(run, changes.removed, completed)
    new = [*changes.added, *(i for i, _ in changes.edited)]
    # A task reworded while it ran stays done: said as the next run will say it.
    done = _removed_but_landed(run, changes.removed, completed) + \
        tuple(reworded_lines(changes.tasks, shown))
    # A line the agent reworded as it ticked it off is done, not new work.
    if all(changes.tasks[i - 1].status != S.PENDING for i in new):
        return done
    return (f"{shown} changed {plan_kept.when(run, path)} "
            f"({changes.summary()}); run "
            "agent-loop again to run what is new",) + done


def _removed_but_landed(run: Run, removed: tuple[TaskState, ...],
                        completed: tuple[int, ...]) -> tuple[str, ...]:
    """Tasks removed from the plan after their agent had started: the run lets a started task
    finish and land (its agent was paid; a task removed before it starts does not start), so
    the removal did not take it back. Said, with what does."""
    lines = []
    for task in removed:
        if task.index not in completed or not task.change_id:
            continue
        undo = {"git": f"`git revert {task.change_id[:12]}` takes it back",
                "jj": f"`jj abandon {task.change_id[:12]}` takes it back"}.get(
                    run.vcs.name, "its files stay in your checkout")
        # By its words: its number in the run names another task in the plan now.
        lines.append(f'task "{task.summary}" was removed from the plan while this run worked, '
                     f"after its agent had started: its change landed; {undo}")
    return tuple(lines)


def exit_code(summary: RunFinished) -> int:
    """0 only when every task the run set out to run ended completed (or skipped)."""
    return UNFINISHED_EXIT if summary.unfinished else 0


def ended_with(summary: RunFinished, error: BaseException | None) -> int:
    """The code a run that ended with `summary` (and `error`, what stopped it, if anything)
    exits with: the error's own (Ctrl+C's 130, a bug's INTERNAL_EXIT), else `exit_code`'s."""
    if isinstance(error, (KeyboardInterrupt, Interrupted)):
        return Interrupted.exit_code
    if isinstance(error, AgentLoopError):
        return error.exit_code
    if error is not None:
        return INTERNAL_EXIT
    return exit_code(summary)


def followed_exit(summary: RunFinished) -> int:
    """The code `--status --follow` ends with, the run it followed having ended with `summary`:
    the run's own; for a run written before the code was kept, 1 where it stopped early."""
    if summary.exit_code is not None:
        return summary.exit_code
    return 1 if summary.stopped else exit_code(summary)
