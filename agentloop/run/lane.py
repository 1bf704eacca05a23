"""One lane: one group's tasks run in order in one working copy, and the one decision after each
attempt: done, retry, wait, or stop. The controller (agentloop.run.controller) starts a lane per
group, one at a time in the user's checkout or several at once in working copies of their own
(agentloop.run.scheduler), and asks before each task whether it may start.

A task plainly completed in a serial run's git lane lands beside the next task's agent
(agentloop.run.beside); a landing held or breached comes to a decision in
agentloop.run.conflicts (`settling`), as a conflict does.

A lane changes no record: it hands each step and each decision (agentloop.run.decisions) to the
controller (agentloop.run.handover) and goes on once the controller has applied and saved it, so
a kill at any moment leaves a state from which a re-run resumes: `running` or `interrupted`
tasks run again, completed ones never do.

A failed attempt is classified by the agent: a usage limit waits and is no attempt, a blocking
error stops the run, a transient one is retried after a backoff, anything else goes to the retry
advisor (agentloop.run.judge). A task gets at most `max_attempts` attempts in all, whatever the
advice. What an earlier run left open of a task is settled before it runs (agentloop.run.recovery).
"""

from __future__ import annotations

import dataclasses

from agentloop.errors import (
    AgentBlocked,
    BudgetReached,
    ConflictLeft,
    Interrupted,
    LandingWithheld,
    RunStopped,
)
from agentloop.proc.signals import hangup_settles_the_task, shielded
from agentloop.run import budget, conflicts
from agentloop.run.agent_run import moved_said_first
from agentloop.run.attempt import run_attempt
from agentloop.run.beside import (
    after_landing,
    beside_finish,
    land_beside,
    lands_beside,
    note_landing,
)
from agentloop.run.checks import commit_line
from agentloop.run.conflicts import settling
from agentloop.run.context import Run
from agentloop.run.decisions import (
    Blocked,
    Charged,
    Completed,
    Decision,
    Failed,
    Fatal,
    Judged,
    Retry,
    Stop,
    Uncounted,
    Unretried,
    WaitFor,
)
from agentloop.run.events import MessageDistilled
from agentloop.run.fixes import Outcome
from agentloop.run.handover import drop, hand
from agentloop.run.history_check import check_history, done_ids, lost_before
from agentloop.run.lane_tag import LaneNote
from agentloop.run.rebuilt import trailers_of
from agentloop.run.recovery import recover
from agentloop.run.selection import commit_message, filed_under
from agentloop.run.verify import FirstChecks, task_checks
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.receipts import money
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.choose import IntegrationConflict
from agentloop.vcs.protocol import CatchesUp, Change, CutShort, KnowsMade


def run_lane(run: Run, tasks: list[TaskState], begun: list[TaskState],
             checks_first: FirstChecks | None = None) -> None:
    """Run `tasks`, one group's, in order in this lane's working copy. `begun` gets each task
    it starts (a run's first agent comes when it is empty); `checks_first`: the user's checks,
    run once before the run's first agent, on the tree as left (several lanes at once: by the
    first lane to come to one, before any lane's)."""
    lost_before(run)
    try:
        for position, task in enumerate(tasks):
            if position and run.options.sleep:
                land_beside(run)  # settled before the pause: its landing starts with no agent
                run.clock.sleep(run.options.sleep)  # pacing; Ctrl+C ends it at once
            if run.shared.halted():
                break  # winding down: no new task starts
            if run.shared.may_start is not None and not run.shared.may_start(task):
                continue  # the controller says no: the run winds down, or the plan dropped it
            if task.status != S.PENDING:
                land_beside(run)  # what an earlier run left lands after what this one made
            if recover(run, task):
                done_ids(run, task)
                _settled_one(run)
                continue
            if not begun and checks_first is not None and not checks_first(run, task):
                break  # they failed in another lane, which says so: no agent starts here
            begun.append(task)
            _caught_up(run)
            runs = len(task.history)
            try:
                with moved_said_first(run, task):
                    _run_task(run, task, lane_end=position == len(tasks) - 1)
            finally:
                if len(task.history) == runs:
                    # No agent began it (the budget held it, or the run wound down while it
                    # waited): not started, so no run in a row counts it as stalled.
                    begun.remove(task)
            _settled_one(run)
            check_history(run, task)
        land_beside(run)  # the group's last landing, before the lane follows or leaves
    except BaseException:
        # Stopped (Ctrl+C, an error): a landing that runs beside is waited for; landed, its
        # task is completed; refused, it stays `landing`, and the next run lands it first.
        with shielded():
            try:
                land_beside(run, fallback=False)
            except Exception:  # noqa: BLE001 - the stop that came first is the one said
                pass
        raise


def _caught_up(run: Run) -> None:
    """A lane brought up to the main line before its next task when that moved on since the
    lane's base (your commit while the task before ran, another lane's or plan's landing), so
    the agent builds on it and its landing does not conflict with it. A landing still running
    beside lands first (a conflict there is the task before's, resolved as at any landing);
    then every task of the group is on the main line and the lane is simply reset to it. The
    group's session goes on: only the files move."""
    vcs = run.vcs
    if not isinstance(vcs, CatchesUp) or not vcs.behind():
        return
    land_beside(run)
    vcs.catch_up()


def _settled_one(run: Run) -> None:
    if run.job is not None:
        run.job.push(run.state)


def _run_task(run: Run, task: TaskState, lane_end: bool = False) -> None:
    """`lane_end`: the lane's last task, whose landing nothing would run beside (the lane's end
    waits for it): it lands in turn, its record saved once, completed."""
    hint, fresh = "", False
    # Once for all its attempts: what they name (its number, its text) changes only before
    # the task starts (a reworded task: the controller's may_start).
    trailers = trailers_of(run, task)
    last = next((a for a in reversed(task.history) if a.role == "developer"), None)
    if task.status == S.FAILED and last is not None:
        # A failed task run again on a later run: a fresh session, with the last advice.
        hint, fresh = last.hint or "", True
    transient, previous_error = 0, None
    retrying = False
    while True:
        try:
            go = _check_budget(run, task)
        except BudgetReached:
            if retrying:
                _unretried(run, task)
            raise
        if not go:
            if retrying:
                _unretried(run, task)
            return  # the run began to wind down while this lane waited for room
        with hangup_settles_the_task():
            try:
                outcome = run_attempt(run, task, hint, fresh, trailers)
            finally:
                run.shared.purse.give_back(task.group)  # its cost is recorded: room again
            if after_landing(run, task, outcome):
                continue  # its work was set aside: brought back, its agent not paid again
            if _settled(run, task, outcome, trailers, lane_end):
                return
        from agentloop.run.judge import judge  # a failed attempt only: most tasks never load it

        decision = judge(run, task, outcome, transient, previous_error)
        hand(run, task, Judged(outcome.attempt, decision))
        if not _act(run, task, decision):
            return
        if isinstance(decision, WaitFor):
            continue  # no attempt: run it again as it was, in the group's session, same hint
        assert isinstance(decision, Retry)
        hint, transient, previous_error = decision.hint, decision.transient, decision.error
        fresh, retrying = True, True


def _settled(run: Run, task: TaskState, outcome: Outcome, trailers: str,
             lane_end: bool = False) -> bool:
    """Finish an attempt whose agent finished (done, blocked, or a fatal stop); False: it
    failed."""
    from agentloop.run.final_message import BLOCKED, FATAL  # see run.attempt._develop

    result, report, attempt = outcome.result, outcome.report, outcome.attempt
    if result.ok and report.signal == FATAL:
        _dropped(run, task, outcome)
        hand(run, task, Fatal(attempt, f"{FATAL}: {report.reason}"))
        raise RunStopped(f"the agent reported a fatal error on task {run.shared.number(task)}: "
                         f"{report.reason or 'no reason given'}")
    if result.ok and report.signal == BLOCKED:
        _dropped(run, task, outcome)
        hand(run, task, Blocked(attempt, report.reason or "blocked, no reason given",
                                result.session_id))
        return True
    if result.ok:
        try:
            _complete(run, task, outcome, trailers, beside=not lane_end)
        except (Interrupted, KeyboardInterrupt):
            with shielded():
                _stopped_unlanded(run, task, outcome)
            raise
        except ConflictLeft:
            with shielded():
                _unfit_unlanded(run, task, outcome)
            raise
        except Exception:  # a failing git, a full disk: the agent's work is whole
            with shielded():
                _failed_unlanded(run, task, outcome)
            raise
        return True
    _dropped(run, task, outcome)
    return False


def _dropped(run: Run, task: TaskState, outcome: Outcome) -> None:
    """The attempt's change dropped; a lane its agent removed (agentloop.vcs.breach) stops its
    group with the line that says so, as at its landing."""
    with settling(run, task, outcome.attempt):
        drop(run, task, outcome.change)


def _stopped_unlanded(run: Run, task: TaskState, outcome: Outcome) -> None:
    """Ctrl+C after the agent ended well, before a commit of its work was made (its commit
    message, the landing's start): the attempt is uncounted and its finished work kept aside,
    for the next run to bring back without paying the agent again, as a Ctrl+C in the checks
    (agentloop.run.attempt) and a kill -9 (run.recovery) are. Left `running`, the run's end
    (ledger.left_open) interrupted it with its change named, and the next run rolled that
    back as unfinished and ran the agent again."""
    if task.status != S.RUNNING:  # a commit was made: its record names it (_left_landing)
        return
    number = outcome.attempt.number
    hand(run, task, Uncounted(number, O.INTERRUPTED, S.INTERRUPTED, "interrupted"))
    drop(run, task, outcome.change, number, finished=True)


def _unfit_unlanded(run: Run, task: TaskState, outcome: Outcome) -> None:
    """The agent left files unmerged (ConflictLeft), git's conflict markers in them: its work
    is not whole. The attempt is uncounted and rolled back (kept, as any dropped attempt's),
    never kept as finished work, which the next run would land markers and all without its
    agent: that run runs the agent again."""
    if task.status != S.RUNNING:
        return
    number = outcome.attempt.number
    hand(run, task, Uncounted(number, O.INTERRUPTED, S.INTERRUPTED, "interrupted"))
    drop(run, task, outcome.change, number)


def _failed_unlanded(run: Run, task: TaskState, outcome: Outcome) -> None:
    """An error (not a stop) after the agent ended well, before a commit of its work was made:
    its finished work is kept aside as a stop's is (_stopped_unlanded), said in one line,
    where the run's end interrupted the task with its change named and the next run rolled it
    back and paid the agent again. Where it cannot be kept aside (the same fault again), the
    records are left as they were and the error is the one the run says."""
    if task.status != S.RUNNING:
        return
    try:
        _stopped_unlanded(run, task, outcome)
    except Exception:  # noqa: BLE001 - the first error is the one to say
        return
    # Said only when a copy was kept: a keep that failed said so itself (vcs.protocol.NotKept).
    kept = any(a.work_kept for a in task.history if a.number == outcome.attempt.number)
    if task.status == S.INTERRUPTED and not task.change_id and kept:
        run.emit(LaneNote(f"task {task.index}: its agent had finished before the error below; "
                          "its work is kept aside, and the next run brings it back, checks and "
                          "commits it without running the agent again", stop=True))


def _act(run: Run, task: TaskState, decision: Decision) -> bool:
    """After the controller applied a decision, what the lane does: wait, stop, or go on
    (True: run the task again)."""
    if isinstance(decision, Failed):
        return False
    if isinstance(decision, Stop):
        raise AgentBlocked(decision.reason) if decision.blocked else RunStopped(decision.reason)
    if isinstance(decision, WaitFor) and decision.failure is not None:
        from agentloop.run.waits import wait_for_limit  # loaded with the judging (run.judge)

        wait_for_limit(run, decision.failure)
    if isinstance(decision, Retry) and decision.wait:
        run.clock.sleep(decision.wait)
    return True


def _task_message(run: Run, task: TaskState, outcome: Outcome, trailers: str) -> str:
    """The task's commit message: distilled when asked (its writer's cost charged), then
    the checks it passed, its note and its trailers."""
    message = commit_message(task, run.state.title)
    if run.distiller is not None and run.vcs.name != "none":
        with settling(run, task, outcome.attempt):  # a lane its agent removed: a breach
            diff = run.vcs.diff(outcome.change)
        distilled = run.distiller(plain=message, group=filed_under(task, run.state.title),
                                  task=task.task, final=outcome.result.text, diff=diff)
        if distilled.cost_usd:
            # Charged as paid: a landing then held, conflicted or stopped hands no Completed,
            # and its writer's cost went into no total.
            hand(run, task, Charged(outcome.attempt, distilled.cost_usd))
        message = distilled.text
        run.emit(MessageDistilled(task.index, distilled.distilled, message.splitlines()[0],
                                  distilled.note, distilled.cost_usd))
    if outcome.checks:  # only a round that passed reaches here
        message += "\n\n" + commit_line([c.command for c in outcome.checks])
    if outcome.note:  # kept for the user to judge: the history says so too
        message += f"\n\n{outcome.status}: {outcome.note}"
    # Every commit names its plan and task: what is done survives the loss of .agent-loop/.
    message += "\n\n" + trailers
    return message


def _complete(run: Run, task: TaskState, outcome: Outcome, trailers: str,
              beside: bool = True) -> None:
    message = _task_message(run, task, outcome, trailers)
    finish_beside = beside_finish(run, outcome) if beside else None
    running = False
    said: str | None = None  # what the lane said of the agent as its landing failed
    try:
        if run.shared.main_breached.is_set():
            # Another lane stopped on a breach of the main line: a landing now would bury
            # what it lost, and its repair line would no longer work as printed.
            raise LandingWithheld(f"task {run.shared.number(task)} ({task.group}) is not "
                                  "landed: another group's agent acted on the main line")
        with settling(run, task, outcome.attempt):
            try:
                if finish_beside is not None:
                    done, running = finish_beside(outcome.change, message)
                else:
                    done = run.vcs.finish(outcome.change, message)
            except IntegrationConflict as conflict:  # a parallel run's lane: another came first
                done = conflicts.resolve(run, task, outcome.change, outcome.result.session_id,
                                         conflict, outcome.attempt)
                said = conflict.note  # said as the landing failed: kept, not said again
        if done.note:
            run.emit(LaneNote(f"task {task.index}: {done.note}"))
        kept = "; ".join(n for n in (said, done.note) if n)
        aside = f"task {task.index}: {kept}" if kept else None
        if done.empty:  # nothing changed: no change to record (backends drop an empty one)
            done = Change(change_id="", empty=True)
        # What the agent did to your checkout (what the backend put right) is kept in the
        # task's record too: the closing lines and `--status` say it again.
        step = Completed(outcome.attempt, done, outcome.status, outcome.note, outcome.feedback,
                         aside=aside)
        if running:
            # Its commit lands beside the next task's agent: the record says so (and names
            # the commit) before that task begins, so a stop at any moment leaves it for the
            # next run to land, its agent not paid again; land_beside completes it.
            note_landing(run, task, step)
            step = dataclasses.replace(step, status=S.LANDING)
        hand(run, task, step)
    except BaseException:
        with shielded():
            _left_landing(run, task, outcome)
        raise


def _left_landing(run: Run, task: TaskState, outcome: Outcome) -> None:
    """A stop (Ctrl+C, an error) after the lane committed the task, before its record named
    that commit: saved `landing`, naming it, for the next run to land first (or find landed),
    its agent not paid again (in your checkout: completed, its commit on your branch). Left
    `running`, the task would run again in the lane that holds its commit already (the
    lane's record of the attempt goes as the stopped run leaves it), find nothing to commit,
    and be completed with its work on no commit of the branch."""
    if task.status != S.RUNNING:  # its record names the commit already (held, conflicted...)
        return
    vcs = run.vcs
    made = vcs if isinstance(vcs, KnowsMade) else None
    # Your checkout (git): a commit its finish made before the stop is on your branch already.
    cut = vcs if made is None and isinstance(vcs, CutShort) else None
    done = made.made() if made is not None else cut.cut_short() if cut is not None else None
    if done is None:  # no commit made
        return
    step = Completed(outcome.attempt, done, outcome.status, outcome.note, outcome.feedback)
    if cut is not None:
        hand(run, task, step)
        return
    if lands_beside(run).landing_beside() == done.change_id:
        note_landing(run, task, step)  # waited for as the lane stops, completed if landed
    hand(run, task, dataclasses.replace(step, status=S.LANDING))


def _unretried(run: Run, task: TaskState) -> None:
    """A failed attempt whose retry the budget (or the run's stop) kept from starting: said
    now, and its task pending with why, not `interrupted` as if stopped midway."""
    options = run.options
    spent_out = options.budget is not None and budget.reckoned(
        options, run.agent.caps_spend, run.state, run.shared.purse.left).total >= options.budget
    why = "the budget ran out before its retry" if spent_out else \
        "the run stopped before its retry"
    failure = task.error or "its attempt failed"
    hand(run, task, Unretried(f"held: {why}"))
    run.emit(LaneNote(f"task {run.shared.number(task)} failed ({failure}) and is held: {why}; "
                      "it runs "
                      "again on the next run"))


def _check_budget(run: Run, task: TaskState) -> bool:
    """Start no attempt once everything spent on this plan since its last --reset has
    reached --budget, nor while the attempts running in other lanes may still reach it
    (agentloop.run.budget); False: the run winds down, start nothing."""
    options = run.options
    if options.budget is None:
        return True
    caps = run.agent.caps_spend
    amount = budget.reservation(options, caps, bool(task_checks(options, task)), run.state)
    left = run.shared.purse.left
    said = run.shared.purse.take(
        task.group, options.budget, lambda: budget.reckoned(options, caps, run.state, left).total,
        amount, run.shared.halted,
        lambda: run.emit(LaneNote(f"task {run.shared.number(task)} waits: " + (
            # No cap and no task finished: what a running task may spend is unknown, whatever
            # is left of the budget (agentloop.run.budget).
            "no task of this plan has a known cost yet, and with --budget one starts at a time "
            "until one has" if amount is None else
            "what was spent and what the running tasks may still spend could reach --budget "
            f"{money(options.budget or 0)}"))))
    if said is budget.Verdict.STOP:
        total = budget.reckoned(options, caps, run.state, left)
        raise BudgetReached(f"budget reached before task {run.shared.number(task)}: spent "
                            f"{total.said()} of {money(options.budget)}", total.total,
                            options.budget)
    return said is budget.Verdict.GO
