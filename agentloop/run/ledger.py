"""The one owner of task records in a run: a task's status, its attempts' records, its costs
and its change ids change here and nowhere else, each status through the table of allowed
changes (agentloop.state.status). `apply` takes a value a lane handed over
(agentloop.run.decisions), changes the records, saves once and emits once; it runs in the
controller's thread, and `save` refuses (LaneWrote, a bug) to write from any other.

The rules that crash safety rests on live here once:
- an attempt is counted when it opens (`open_attempt`), so a kill at any later instant leaves a
  task that a re-run picks up;
- an attempt that was not the task's fault (Ctrl+C, SIGTERM, a kill, a usage limit, an agent
  that cannot run at all) does not count (`uncount`), and its change is dropped (the lane's
  VCS drops it, the records forget it: `Dropped`), so the history keeps only attempts that
  counted and the user's edits made before the re-run stay theirs;
- a change id is recorded only while that change exists.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Sequence

from agentloop.agents import AgentResult
from agentloop.errors import AgentLoopError, Interrupted
from agentloop.proc.signals import shielded
from agentloop.run.checks import CheckRun, as_record
from agentloop.run.context import Run
from agentloop.run.decisions import (
    Blocked,
    Breached,
    Charged,
    ChecksRan,
    Completed,
    Conflicted,
    Decision,
    Dropped,
    Failed,
    Fatal,
    Held,
    Judged,
    Marked,
    Moved,
    Opened,
    Retry,
    RunBegun,
    RunEnded,
    Step,
    Stop,
    Uncounted,
    Unretried,
    WaitFor,
    Waiting,
)
from agentloop.run.events import ChangeAbandoned, ChangeCreated, RetryDecided, TaskFinished
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.project import take_edit
from agentloop.state.receipts import usd
from agentloop.state.schema import Attempt, State, TaskState, iso, now
from agentloop.state.status import FINISHED, SETTLING, TaskStatus, check
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.protocol import Change

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop.plan.parse import TaskFile
    from agentloop.state.project import Project
    from agentloop.state.reconcile import Reconciled


def move(task: TaskState, status: str) -> TaskStatus:
    """Set the task's status, refusing (as a bug) a change the table in state.status forbids."""
    task.status = check(task.status, status, task.index)
    return task.status


def requeue(task: TaskState) -> None:
    """The task waits its turn again (a pause of the whole run), its open attempt closed."""
    move(task, S.PENDING)


def again(task: TaskState) -> None:
    """--again: the task runs once more, in a new change, with new attempts; its earlier
    change stays in history (and in the task's records)."""
    move(task, S.PENDING)
    task.attempts, task.error, task.feedback = 0, None, None
    task.change_id = task.commit_id = None
    task.stalled_runs = 0
    task.done_as = None  # the words it runs now are the plan's


def skip(task: TaskState) -> None:
    """The user ticked the task in the plan while the run worked: it does not run. One an
    earlier run kept off the main line no longer waits for its conflict or your edits:
    --status stops saying to resolve it and run again to land it."""
    if task.status in SETTLING:
        task.error = task.waiting = None
    move(task, S.SKIPPED)


def reword(task: TaskState, text: str, summary: str, log_name: str) -> None:
    """The user reworded the task before it started: it runs as it reads now, and is logged
    under the name its words give it (a person looks for them). Earlier attempts' logs keep
    their names: the history, the archive and events.jsonl point at them."""
    task.task, task.summary, task.log_name = text, summary, log_name


def found_done(task: TaskState, change_id: str, commit_id: str) -> None:
    """A fresh state's task whose commit the history already holds (agentloop.run.rebuilt):
    built as completed before the run, as reconciling builds records, not a move the table
    rules (a run never takes a pending task to completed without an attempt)."""
    task.status, task.change_id, task.commit_id = S.COMPLETED, change_id, commit_id


def moved(task: TaskState, change_id: str, commit_id: str) -> None:
    """A finished task's change found elsewhere on the history by its trailers (the user
    rebased it): its record follows it, its status stays."""
    task.change_id, task.commit_id = change_id, commit_id


def renamed(task: TaskState, change_id: str | None) -> None:
    """A finished task's change, recorded by its git commit (git's change id is its commit id),
    named as jj names the same commit now that jj's repository holds it; None: jj's repository
    holds no such commit, and the record keeps the git commit with no commit of jj's
    (agentloop.state.whereabouts.jj_lacks), asked after no more. Its status stays."""
    if change_id is None:
        task.commit_id = None
    else:
        task.change_id = change_id


def open_attempt(task: TaskState, change: Change) -> None:
    """A new attempt of `task` begins in `change`: it counts from this instant."""
    task.attempts += 1
    move(task, S.RUNNING)
    task.started_at, task.finished_at = now(), None
    task.change_id, task.commit_id = change.change_id or None, change.commit_id or None
    task.error = task.feedback = None


def new_run(task: TaskState, change: Change, number: int, log: str, resumed: bool,
            iteration: int = 1, role: str = "developer", round_: int = 0,
            workdir: str | None = None) -> Attempt:
    """Add the record of one agent run to the task's history, before it starts."""
    attempt = Attempt(number=number, started_at=now(), log=log, iteration=iteration,
                      resumed=resumed, workdir=workdir, change_id=change.change_id or None,
                      commit_id=change.commit_id or None, role=role, round=round_)
    task.history.append(attempt)
    task.log = attempt.log
    return attempt


def record_result(task: TaskState, attempt: Attempt, result: AgentResult) -> None:
    """What a run reported: its session, its own cost and tokens, the session's totals."""
    attempt.session_id = result.session_id
    attempt.session_cost_usd = result.totals.cost_usd
    attempt.session_usage = dict(result.totals.usage)
    attempt.cost_usd = usd(result.cost_usd)
    attempt.cost_known = result.cost_known
    attempt.usage = dict(result.usage)
    attempt.model = result.model
    attempt.num_turns = result.num_turns
    attempt.duration_ms = result.duration_ms
    attempt.exit_code = result.exit_code
    attempt.finished_at = now()
    task.cost_usd = usd(task.cost_usd + attempt.cost_usd)
    if result.ok and attempt.role == "developer":  # never the reviewer's session
        task.session_id = result.session_id


def checks_ran(attempt: Attempt, runs: Sequence[CheckRun]) -> None:
    """The user's checks ran after this agent run: each run is part of its record."""
    attempt.checks.extend(as_record(r) for r in runs)


def add_helper_cost(task: TaskState, attempt: Attempt, cost: float) -> None:
    """A small call about this attempt (advisor, commit message) is charged to its task."""
    attempt.helper_cost_usd = usd(attempt.helper_cost_usd + cost)
    task.cost_usd = usd(task.cost_usd + cost)


def uncount(task: TaskState, number: int, outcome: str, status: str, reason: str) -> None:
    """Attempt `number` does not count: its unfinished runs end as `outcome`, the task waits
    its turn again as `status` (interrupted or pending)."""
    for record in task.history:
        if record.number == number and record.outcome == O.RUNNING:
            record.outcome = outcome
            record.finished_at = record.finished_at or now()
            if record.exit_code is None:
                # Stopped before its agent reported a total: what it spent is not known, and
                # 0.0 as if known would make every total read low without saying so.
                record.cost_known = False
    move(task, status)
    task.error = reason
    task.attempts = max(0, task.attempts - 1)


def forget_change(task: TaskState, number: int | None = None) -> None:
    """The task's change is gone: no record names it any more."""
    task.change_id = task.commit_id = None
    for record in task.history:
        if number is None or record.number == number:
            record.change_id = record.commit_id = None


def complete(task: TaskState, attempt: Attempt, done: Change, status: str = S.COMPLETED,
             note: str | None = None, aside: str | None = None) -> None:
    """The task is done (or unapproved, its change kept) in the change `done`; its note, and
    `aside`, what its agent did to your checkout, said after it."""
    attempt.outcome = move(task, status)
    task.change_id = attempt.change_id = done.change_id or None
    task.commit_id = attempt.commit_id = done.commit_id or None
    task.files, task.aside = list(done.files), aside
    task.error = "; ".join(n for n in (note, aside) if n) or None
    attempt.finished_at = task.finished_at = now()


def fail(task: TaskState, reason: str) -> None:
    """The task failed for good in this run (out of attempts, or the advisor said stop)."""
    move(task, S.FAILED)
    task.error, task.files = reason, []
    if task.history:
        task.history[-1].finished_at = now()
    task.finished_at = now()


def blocked(task: TaskState, attempt: Attempt, reason: str, session: str | None) -> None:
    """The agent said it cannot do this task without a person; the group's chain goes on."""
    attempt.outcome = move(task, S.BLOCKED)
    task.error = attempt.reason = reason
    task.session_id = session
    task.finished_at = now()


def conflicted(task: TaskState, attempt: Attempt, commit: str, reason: str,
               session: str | None) -> None:
    """A parallel run's task whose change does not fit the main line: kept (on its lane's
    branch) for a person, neither done nor failed; the next run tries to land it again."""
    attempt.outcome = move(task, S.CONFLICTED)
    task.change_id = task.commit_id = attempt.change_id = attempt.commit_id = commit
    task.error = attempt.reason = reason
    task.session_id = session
    task.finished_at = attempt.finished_at = now()


def held(task: TaskState, attempt: Attempt, commit: str, reason: str) -> None:
    """A lane's task whose landing waited too long on the user's edits: its commit kept on the
    lane's branch, neither done nor failed; the next run lands it first."""
    attempt.outcome = move(task, S.HELD)
    task.change_id = task.commit_id = attempt.change_id = attempt.commit_id = commit
    task.error = attempt.reason = reason
    task.finished_at = attempt.finished_at = now()


def stopped(task: TaskState, attempt: Attempt, reason: str) -> None:
    """The agent reported an error so grave that the run stops; the task waits its turn."""
    attempt.outcome = O.STOPPED
    move(task, S.PENDING)
    task.error = attempt.reason = reason


def decided(attempt: Attempt, hint: str, reason: str | None = None) -> None:
    """A failed attempt was judged: its hint for the next one, and why."""
    attempt.finished_at = now()
    attempt.hint = hint or None
    if reason is not None:
        attempt.reason = reason




class LaneWrote(RuntimeError):
    """A thread other than the controller's changed or saved a task record: a bug of ours
    (lanes hand values to the controller, agentloop.run.handover), so not an AgentLoopError."""


def _owner(run: Run) -> None:
    owner = run.shared.owner
    if owner is not None and threading.current_thread() is not owner:
        raise LaneWrote(f"{threading.current_thread().name} changed the run's records; only the "
                        "controller's thread may (hand a value to it instead)")


def save(run: Run, task: TaskState | None = None) -> None:
    """Persist the state now, in the controller's thread; `task`: only that task's record
    (and top-level fields) changed since the last save, so a journal line can say it all."""
    _owner(run)
    with run.shared.lock:
        run.project.store.save(run.state, task)


def apply(run: Run, task: TaskState, step: Step) -> Attempt | None:
    """One value a lane handed over (agentloop.run.decisions), applied to the task's records,
    saved once and said once; a `RunBegun`'s answer is the run's new record."""
    _owner(run)
    if isinstance(step, Waiting):
        task.waiting = step.text
        save(run, task)
        return None
    task.waiting = None  # whatever came next, the landing no longer waits
    if isinstance(step, RunBegun):
        record = new_run(task, step.change, step.number, step.log, step.resumed, step.iteration,
                         step.role, step.round, step.workdir)
        save(run, task)
        return record
    if isinstance(step, Judged):
        _judged(run, task, step.record, step.decision)
        return None
    if not _record(task, step):  # saved with the next step's save
        if isinstance(step, Opened):  # one journal line for the opening and the run's record
            _say(run, task, step)
        return None
    save(run, task)
    _say(run, task, step)
    if isinstance(step, Completed):
        # Once a task is done, after its agent: not on the way to the first agent (loaded
        # meanwhile by agentloop.run.ahead._made_ahead).
        from agentloop.run import tick_boxes

        if tick_boxes.landed(run, task):
            save(run, task)  # the state's hash of the plan moved to the ticked plan's
    return None


def _record(task: TaskState, step: Step) -> bool:
    """What `step` changes in the task's records and its runs'; False when it is saved with
    the next step's save (and said then, but for an opening)."""
    if isinstance(step, ChecksRan):
        checks_ran(step.record, step.runs)
        return False
    if isinstance(step, Opened):
        open_attempt(task, step.change)
        return step.save
    if isinstance(step, RunEnded):
        record_result(task, step.record, step.result)
    elif isinstance(step, Charged):
        add_helper_cost(task, step.record, step.cost)
    elif isinstance(step, Marked):
        step.record.outcome = step.outcome
        if step.reason is not None:
            step.record.reason = step.reason
        if step.verdict is not None:
            step.record.verdict = step.verdict
        if step.resets_at is not None:  # kept for a re-run, as a task's own limit (_judged)
            step.record.resets_at = iso(step.resets_at)
        return step.save
    elif isinstance(step, Dropped):
        forget_change(task, step.number)
        if step.finished and step.kept:
            finished = [a for a in task.history if a.number == step.number and
                        a.role == "developer" and a.exit_code is not None]
            if finished:
                finished[-1].work_kept = step.kept
    elif isinstance(step, Moved):
        moved(task, step.change_id, step.commit_id)
    elif isinstance(step, Uncounted):
        if step.stopped:  # runs that ended well were stopped by what came after
            for done in task.history:
                if done.number == step.number and done.outcome == O.RUNNING and \
                        done.exit_code is not None:
                    done.outcome = O.STOPPED
        uncount(task, step.number, step.outcome, step.status, step.reason)
    elif isinstance(step, Completed):
        add_helper_cost(task, step.record, step.helper_cost)
        task.feedback = step.feedback or task.feedback  # an attempt's opening cleared it
        complete(task, step.record, step.done, step.status, step.note, step.aside)
    elif isinstance(step, Blocked):
        blocked(task, step.record, step.reason, step.session)
    elif isinstance(step, Conflicted):
        conflicted(task, step.record, step.commit, step.reason, step.session)
    elif isinstance(step, Held):
        held(task, step.record, step.commit, step.reason)
    elif isinstance(step, Breached):  # not the task's attempt: its lane is left as it is
        uncount(task, step.record.number, O.STOPPED, S.INTERRUPTED, step.line)
        step.record.reason = step.line
    elif isinstance(step, Fatal):
        stopped(task, step.record, step.reason)
    elif isinstance(step, Unretried):
        # Pending, not interrupted: its failed attempt was paid for and counts (interrupted
        # would uncount it, and its error would read as a stop midway).
        task.error = f"{task.error}; {step.reason}" if task.error else step.reason
        requeue(task)
    return True


def _say(run: Run, task: TaskState, step: Step) -> None:
    """The one event a saved step is said by."""
    if isinstance(step, Opened) and step.change.change_id:
        run.emit(ChangeCreated(run.vcs.name, step.change.change_id))
    elif isinstance(step, Dropped) and not step.said and (step.change_id or step.kept):
        run.emit(ChangeAbandoned(run.vcs.name, step.change_id, step.kept))
    elif isinstance(step, Marked) and step.said is not None:
        run.emit(step.said)
    elif isinstance(step, Completed) and step.said:
        # A landing that runs beside the next agent is said as done: its commit is made, and
        # lands as itself (or the task is said again, held or conflicted, should it not).
        status = S.COMPLETED if task.status == S.LANDING else task.status
        run.emit(TaskFinished(task.index, status, task.change_id, len(task.files),
                              step.note, empty=step.done.empty, number=_number(run, task)))
    elif isinstance(step, (Blocked, Conflicted, Held)):
        run.emit(TaskFinished(task.index, task.status, None if isinstance(step, Blocked)
                              else task.change_id, 0, task.error, number=_number(run, task)))


def _number(run: Run, task: TaskState) -> int:
    """The task's number in the plan as the run last read it (edited meanwhile): what a
    TaskFinished names it by besides the run's own number."""
    return run.shared.number(task)


def _judged(run: Run, task: TaskState, attempt: Attempt, decision: Decision) -> None:
    """A failed attempt's decision applied to the task's records: saved once, said once."""
    if isinstance(decision, WaitFor) or (isinstance(decision, Stop) and not decision.counted):
        # Not the task's fault: not an attempt, and the task waits its turn again.
        outcome = decision.outcome if isinstance(decision, WaitFor) else O.BLOCKED
        attempt.reason = decision.reason
        uncount(task, attempt.number, outcome, S.PENDING, decision.reason)
        attempt.outcome = outcome
        if isinstance(decision, WaitFor) and decision.failure is not None \
                and decision.failure.resets_at is not None:
            # Kept: a run stopped before the reset (Ctrl+C, out of waits) leaves its re-run
            # the time to wait for, where it would start an agent the limit turns away.
            attempt.resets_at = iso(decision.failure.resets_at)
        save(run, task)
        if isinstance(decision, WaitFor) and decision.outcome == O.PAUSED:
            run.emit(RetryDecided(task.index, task.attempts, True, "paused",
                                  f"the whole run was stopped for {decision.paused:.0f}s while "
                                  "the agent worked, and the run failed after it "
                                  f"({decision.reason}): no attempt", "", "pause", 0.0))
        return
    if isinstance(decision, Failed):
        attempt.outcome = decision.outcome or O.FAILED
        attempt.reason = decision.attempt_reason or decision.reason
        add_helper_cost(task, attempt, decision.helper_cost)
        if decision.advice is not None:  # the advisor's no, said before the task fails
            _said(run, task, attempt, decision.advice, False)
        fail(task, decision.reason)
        save(run, task)
        run.emit(TaskFinished(task.index, task.status, None, 0, decision.reason,
                              number=_number(run, task)))
        return
    if isinstance(decision, Stop):  # too many transient failures in a row: the run pauses
        attempt.outcome, task.error = O.FAILED, decision.error
        attempt.reason = decision.error
        requeue(task)
        save(run, task)
        return
    attempt.outcome, task.error, attempt.reason = O.FAILED, decision.failure, decision.reason
    add_helper_cost(task, attempt, decision.helper_cost)
    _said(run, task, attempt, decision, True)


def _said(run: Run, task: TaskState, attempt: Attempt, advice: Retry, retry: bool) -> None:
    decided(attempt, advice.hint)
    save(run, task)
    run.emit(RetryDecided(task.index, task.attempts, retry, advice.kind, advice.advice,
                          advice.hint, advice.source, advice.wait, advice.helper_cost))


def plan_renamed(run: Run, name: str) -> None:
    """The plan was renamed `name` (relative to the root) while the run worked
    (agentloop.run.plan_kept): its state is saved under the new name, so the closing lines and
    `--status` name the file there is."""
    _owner(run)
    run.state.task_file = name
    save(run)


def plan_read(run: Run, parsed: TaskFile, changes: Reconciled,
              found: Callable[[], list[str]] | None = None) -> list[str]:
    """The plan as the run last read it (`parsed`, edited while the run worked) recorded as
    the plan's state, its records matched by `changes` as the next run would match them: the
    run took that edit in (a removed task not started, a reworded one run as it reads), so
    `--status` says no change, and only an edit made after that read is news. `found`: what
    marks the added tasks the history holds done (its lines, returned), in the same save."""
    _owner(run)
    # A kept task's recorded error (a held task's command that goes on: `--task 5-7`) names
    # tasks by the run's numbers, which the records give up now: by the plan's, as the closing
    # lines said it, so that `--status` says what they said.
    from agentloop.run.names_now import matched

    names = matched(run.state.tasks, changes)
    was = {t.log_name: t.index for t in run.state.tasks if names.kept(t.index)}
    for task in changes.tasks:   # the records the state takes, by the run's numbers `was`
        if task.error and task.log_name in was:
            task.error = names.within(task.error, was[task.log_name])
    take_edit(run.project, run.state, parsed, changes)
    said = found() if found is not None else []
    save(run)
    return said


def left_open(run: Run, reason: str) -> list[TaskState]:
    """After every lane ended: a task still `running` (a lane stopped by an error between its
    agent and its record, such as the history guard) is interrupted, its attempt uncounted and
    its change still named, for the next run to land if it was committed or else drop
    (agentloop.run.recovery.recover), so no total says `running` once the run is over."""
    settled = []
    for task in run.state.tasks:
        if task.status == S.RUNNING:
            number = task.history[-1].number if task.history else 0
            uncount(task, number, O.INTERRUPTED, S.INTERRUPTED, task.error or reason)
            settled.append(task)
    if settled:
        save(run)
    return settled


def closed_unreached(run: Run) -> None:
    """As a run begins: the agent runs an earlier agent-loop left open (a kill) on tasks no lane
    reaches any more (done, or ticked by hand since; removed from the plan, their records among
    the retired runs) are closed as that run's stop left them, interrupted and of unknown cost.
    No lane settles them: left open, a ticked task's run counted as left open by every later
    run for good, and a removed task's counted nothing at all against --budget (only finished
    runs of the retired count). Closed, each counts once, as any interrupted run does."""
    closed = False
    for runs in [t.history for t in run.state.tasks if t.status in FINISHED] + \
            [run.state.retired]:
        for record in runs:
            if record.finished_at is None and record.exit_code is None:
                record.outcome = O.INTERRUPTED
                record.finished_at = now()
                record.cost_known = False
                record.reason = record.reason or "the run was killed"
                closed = True
    if closed:
        save(run)


def remembered_on_stop(project: Project, state: State, before: dict[str, object],
                       stop: BaseException) -> None:
    """A stop (Ctrl+C, SIGTERM) before the run's first save (the checkout being looked at, the
    agent's program checked): what the state remembers of this run's options (its --budget
    above all), when that differs from `before` (as the state was read), is saved as the first
    save would have, so a re-run without --budget keeps it, as the stop's "Resume with" line
    says it does. An error (a refusal) writes nothing, as before. A state that cannot be
    written says so on the next run (the stop that came first is the one said)."""
    if not isinstance(stop, (Interrupted, KeyboardInterrupt)) or state.remembered == before:
        return
    with shielded():
        try:
            project.store.save(state)
        except (AgentLoopError, OSError):
            pass


def stalls(run: Run, begun: Sequence[TaskState]) -> None:
    """Count the runs in a row each task this run started has gone without completing."""
    for task in begun:
        task.stalled_runs = 0 if task.status == S.COMPLETED else task.stalled_runs + 1
