"""One attempt of a task: its change, its prompt, the developer's run (or several iterations in
one session), and the review, ending in an Outcome the lane settles. Each step hands what
happened to the controller (agentloop.run.handover); none changes a record itself.

A stop in the middle of any of it (Ctrl+C, SIGTERM, an agent that cannot run, a blocking
reviewer error) is handled here, once: the attempt does not count, and its change is dropped.
"""

from __future__ import annotations

from dataclasses import replace

from agentloop.agents import AgentResult
from agentloop.errors import AgentBlocked, GitUnsafe, Interrupted
from agentloop.proc.signals import agent_finished, shielded
from agentloop.run import submodule_files
from agentloop.run.agent_run import run_agent, workdir_of
from agentloop.run.checks import checks_note
from agentloop.run.conflicts import breached
from agentloop.run.context import Run
from agentloop.run.decisions import Marked, Opened, Uncounted
from agentloop.run.events import TaskStarted
from agentloop.run.fixes import Outcome
from agentloop.run.handover import drop, hand
from agentloop.run.lane_tag import LaneNote
from agentloop.run.selection import commit_message, resume_session, session_workdir, shown_session
from agentloop.run.verify import task_checks, verify
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import Attempt, TaskState, now
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.choose import LaneBreach
from agentloop.vcs.protocol import Change, ExpectsMessage

RETRY_NOTE = ("Note: an earlier attempt at this task was stopped before it finished, and its "
              "file changes were discarded. Start the task again from the current files.\n\n")
KEPT_NOTE = ("Note: an earlier attempt at this task was stopped before it finished; its "
             "commits and file changes are kept. Look at what is there and finish the task "
             "from it.\n\n")
COMPLETE_NOTE = ("This task may take several turns. When it is fully done, end your final "
                 "message with the line TASK_COMPLETE.")
CONTINUE_PROMPT = ("Continue with the same task. Your progress so far:\n{progress}\n\n"
                   "Keep going; when the task is fully done, end your final message with the "
                   "line TASK_COMPLETE.")
PLAN_CONTEXT_LIMIT = 8000


def task_started(run: Run, task: TaskState, attempt: int, iteration: int = 1) -> TaskStarted:
    """The event, counting the tasks this run takes (not the plan's): [2/3], not [3/4]. A
    task the user removed from the plan meanwhile (not started) is not one of them: the count
    goes down, with no gap in the numbers ([1/5], task 2 removed, [2/4])."""
    dropped = run.tally.dropped
    planned = [i for i in run.tally.planned if i not in dropped]
    position = planned.index(task.index) + 1 if task.index in planned else 0
    number = run.shared.number(task)
    return TaskStarted(task.index, len(run.state.tasks), task.group, task.summary, attempt,
                       iteration, position=position, count=len(planned), number=number)


def _where_it_began(run: Run, task: TaskState, resume: str | None) -> str | None:
    """The session to go on with, if it began where this task's agent works: its earlier turns
    name that folder's files by their full paths, and an agent that goes on in another folder
    (the checkout then a lane, or the other way round) writes there. Else a fresh one, said."""
    if resume is None:
        return None
    began, here = session_workdir(run.state, resume), workdir_of(run)
    if began is None or began == here:
        return resume
    where = "your checkout" if began == "." else began
    run.emit(LaneNote(f"task {task.index} starts a fresh session: its group's session "
                      f"{shown_session(resume)} began in {where}, and "
                      f"its turns name the files there by their full paths"))
    return None


def run_attempt(run: Run, task: TaskState, hint: str, fresh: bool, trailers: str) -> Outcome:
    """One attempt: a change, the developer's run(s), the review. `trailers`: the lines that
    end the task's commit message (agentloop.run.rebuilt.trailers_of)."""
    run.emit(task_started(run, task, task.attempts + 1))
    # Retries run in a fresh session: the failed attempt's edits are gone, and its
    # conversation would tell the agent otherwise.
    resume = None if fresh else resume_session(run.state, task)
    if run.job is not None and resume in run.job.elsewhere:  # it stayed on another machine
        resume = None
    resume = _where_it_began(run, task, resume)
    plain = commit_message(task, run.state.title)
    if isinstance(run.vcs, ExpectsMessage):
        # git: the message a plain completion commits with (lane._complete)
        run.vcs.expect_message(plain + "\n\n" + trailers)
    change = run.vcs.begin(plain)
    if change.note:
        run.emit(LaneNote(f"task {task.index} {change.note}"))
    submodule_files.before(run)
    prompt = first_prompt(run, task, hint, resume, change.kept)
    finished = _finished_before(task) if not change.kept else None
    unreviewed = finished is not None and unreviewed_landing(task, run.options.review)
    went_on = _finished_in_place(task, change) if change.kept else None
    # Saved with the developer's run record, handed over next, unless the work a stopped run
    # kept comes back first (a VCS step of its own, after which the opening must be on disk).
    hand(run, task, Opened(change, save=finished is not None or went_on is not None))
    number = _next_number(task)
    try:
        outcome = _brought_back(run, task, change, finished) if finished else None
        if outcome is not None and unreviewed:
            run.emit(LaneNote(f"task {task.index}: its work, finished before the last run "
                              "stopped, lands without the review that run began (--no-review)"))
        outcome = outcome or (_gone_on(run, task, change, went_on) if went_on else None)
        outcome = outcome or _develop(run, task, change, prompt, resume, number)
        number = outcome.attempt.number
        if outcome.result.ok:
            agent_finished()  # a closed terminal now waits for the task to be committed
            finished = outcome.attempt
        developed = outcome.attempt
        if outcome.succeeded:
            # What it wrote inside a submodule, kept and said before the checks: a task that
            # wrote only there changed files, for --require-changes too.
            outcome = submodule_files.after(run, task, outcome)
            outcome = verify(run, task, outcome)  # the user's checks, with fix runs
        if run.options.review and outcome.succeeded:
            outcome = _review_rounds(run, task, outcome)
        if outcome.attempt is not developed and outcome.succeeded:
            outcome = submodule_files.after(run, task, outcome)  # and what fix runs wrote
        # A failed attempt's writes inside a lane's submodule too: kept before its lane goes.
        return submodule_files.at_end(run, task, outcome) or outcome
    except BaseException as exc:
        with shielded():
            try:  # what it may raise leaves the attempt open no less
                submodule_files.at_end(run, task, None)
            finally:
                if isinstance(exc, LaneBreach) and task.status == S.RUNNING:
                    _breached(run, task, number, exc)
                else:
                    _abandon(run, task, change, number, exc, finished is not None and
                             finished.number == number)
        raise


def _breached(run: Run, task: TaskState, number: int, breach: LaneBreach) -> None:
    """What the agent did to its lane stopped the attempt before its landing (the review's or
    --require-changes' look at its diff, a fix run's): recorded as the landing's check records
    it (conflicts.breached), the finished agent's work the VCS kept aside from the lane with
    it. Abandoning the change instead would meet the same damage, keep nothing and pay the
    agent again on the next run."""
    record = next((a for a in reversed(task.history) if a.number == number), None)
    if record is not None:
        breached(run, task, record, breach)


def _finished_before(task: TaskState) -> Attempt | None:
    """The task's last finished run, when the run was stopped after it (in its checks, in a
    fix run or in the review that followed, or by what its agent did to its lane), its work
    kept aside (Attempt.work_kept)."""
    last = task.history[-1] if task.history else None
    if last is None:
        return None
    # A reviewer's run that gave its verdict keeps it when a stop comes after (its commit
    # message, the landing): the stop is the attempt's, the work the one it judged.
    judged = last.role == "reviewer" and last.verdict in (O.APPROVED, O.FEEDBACK) and \
        task.status == S.INTERRUPTED
    # A reviewer's or fix run's usage limit the run stopped in (Ctrl+C in its wait, out of
    # waits): the re-run waits for its reset (Attempt.resets_at), then goes on from the work.
    # A fix run is the developer's session resumed, in a round of its own.
    limited = (last.role != "developer" or last.round > 0) and last.outcome == O.LIMITED
    if last.outcome not in (O.INTERRUPTED, O.STOPPED) and not judged and not limited:
        return None
    # The stopped run is the fix run or the reviewer when not the finished one itself; the
    # kept work is the attempt's as it stood then, a stopped fix run's edits included.
    kept = [a for a in task.history if a.number == last.number and a.work_kept]
    return kept[-1] if kept else None


def unreviewed_landing(task: TaskState, review: bool) -> bool:
    """Whether the task's work, kept when the last run stopped in its review (the reviewer's
    usage limit waited for, Ctrl+C), comes back in a run without --review: no agent starts for
    it, and it lands without the review that run began."""
    last = task.history[-1] if task.history else None
    return not review and last is not None and last.role == "reviewer" and \
        last.verdict != O.APPROVED and _finished_before(task) is not None


def finished_well(task: TaskState, number: int) -> Attempt | None:
    """The developer's last run of attempt `number`, when it ended well (exit 0 with a result:
    a run with no result line has no turns); None otherwise. A kill after it (in its checks, a
    fix run, the review: the reviewer's own run too, whose record then comes last, the wait
    for the landing before) leaves its work the finished agent's."""
    developed = next((a for a in reversed(task.history)
                      if a.number == number and a.role == "developer"), None)
    if developed is None or developed.exit_code != 0 or developed.num_turns is None:
        return None
    return developed


def _finished_in_place(task: TaskState, change: Change) -> Attempt | None:
    """The developer's run of the attempt a killed run left, when that attempt goes on in place
    (its agent committed: change.kept) and the run had finished well in `change` itself; None
    otherwise. jj: a kept change may be a later begin's, cut short after that finished run's
    change was dropped (its work kept aside: the record no longer names a change), which
    holds none of the agent's files; git's kept attempt is always the record's own (its change
    has no id)."""
    last = task.history[-1] if task.history else None
    if last is None or last.outcome != O.INTERRUPTED:
        return None
    finished = finished_well(task, last.number)
    if finished is None or (finished.change_id or "") != change.change_id:
        return None
    return finished


def _gone_on(run: Run, task: TaskState, change: Change, finished: Attempt) -> Outcome:
    """The outcome of a finished agent whose commits and files a killed run left in place."""
    run.emit(LaneNote(f"task {task.index}: its agent had finished before the last run was "
                      "killed; its commits and files are where it left them, and the agent is "
                      "not paid again (the checks and the rest go on from there)"))
    from agentloop.run.final_message import Report  # see _develop

    return Outcome(finished, change, AgentResult(ok=True, exit_code=finished.exit_code,
                                                 session_id=finished.session_id), Report())


def _brought_back(run: Run, task: TaskState, change: Change, finished: Attempt
                  ) -> Outcome | None:
    """The finished agent's work brought back into `change`, as the outcome of its run (which
    then goes on to the checks); None when the VCS could not bring it back (the agent runs)."""
    assert finished.work_kept is not None
    before = run.shared.set_aside.pop(task.index, None)
    # Set aside by this run while the task before landed, or by a run that was stopped.
    kept = (f"task {task.index}: its agent's finished work, set aside while task {before} "
            "landed," if before is not None else
            f"task {task.index}: its agent had finished before the last run was stopped; its "
            "work, kept aside,")
    if not run.vcs.bring_back(finished.work_kept):
        run.emit(LaneNote(f"{kept} no longer fits: the agent runs again"))
        return None
    run.emit(LaneNote(f"{kept} is back, and the agent is not paid again (the checks and the "
                      "rest go on from there)"))
    from agentloop.run.final_message import Report  # see _develop

    return Outcome(finished, change, AgentResult(ok=True, exit_code=finished.exit_code,
                                                 session_id=finished.session_id),
                   Report())


def _review_rounds(run: Run, task: TaskState, outcome: Outcome) -> Outcome:
    """Review the change until approved or out of rounds (agentloop.run.review); each fix is
    held to the checks again; a failed fix run comes back as the attempt's result, for the
    lane's rules."""
    from agentloop.run import review  # a run that asks for reviews: most runs do not

    rounds = run.options.max_review_rounds
    feedback = None
    for round_ in range(1, rounds + 1):
        verdict = review.judge(run, task, outcome, round_, feedback)
        if isinstance(verdict, str):
            return replace(outcome, status=S.UNAPPROVED, feedback=feedback,
                           note=f"the reviewer failed twice in round {round_}: {verdict}")
        if verdict.approved:
            return outcome
        feedback = verdict.feedback
        hand(run, task, Marked(outcome.attempt, O.FEEDBACK))
        if round_ == rounds:
            return replace(outcome, status=S.UNAPPROVED, feedback=feedback,
                           note=f"not approved after {rounds} review round{'s' * (rounds > 1)}")
        outcome = review.fix(run, task, outcome, round_, feedback)
        if outcome.succeeded:
            outcome = verify(run, task, outcome)  # the fix is held to the checks too
        if not outcome.succeeded:
            return outcome  # the lane's rules take over
    raise AssertionError("unreachable")


def first_prompt(run: Run, task: TaskState, hint: str, resume: str | None,
                 kept: bool = False) -> str:
    """The attempt's prompt: the task, notes about earlier attempts (`kept`: the stopped one's
    work is there to go on from), and for a fresh session the plan's context and the learnings
    so far."""
    prompt = task.task
    if kept:
        prompt = KEPT_NOTE + prompt
    elif task.history and task.history[-1].outcome in (O.INTERRUPTED, O.RUNNING):
        prompt = RETRY_NOTE + prompt
    if hint:
        prompt += (f"\n\nAn earlier attempt at this task failed ({task.error}). "
                   f"Advice for this attempt: {hint}")
    if resume is None:
        prompt = run.learnings.for_prompt() + prompt
        context = (run.state.context or "").strip()
        if context:
            prompt = (f"The plan this task belongs to says, before its tasks:\n"
                      f"{context[:PLAN_CONTEXT_LIMIT]}\n\n---\n\n{prompt}")
    prompt += checks_note(task_checks(run.options, task))
    if run.options.iterations > 1:
        prompt += "\n\n" + COMPLETE_NOTE
    return prompt


def _next_number(task: TaskState) -> int:
    """The attempt's number: one more than the runs before, except after a usage limit (or a
    failure after the whole run was stopped), which was no attempt: its rerun keeps that one's
    number (its log is `…-run2.log`)."""
    firsts = [a for a in task.history if a.iteration == 1 and not a.round]
    if firsts and firsts[-1].outcome in (O.LIMITED, O.PAUSED):
        return firsts[-1].number
    return len(firsts) + 1


def _develop(run: Run, task: TaskState, change: Change, prompt: str, resume: str | None,
             number: int) -> Outcome:
    """The developer's run, or up to `iterations` runs in one session until TASK_COMPLETE."""
    iterations = run.options.iterations
    for iteration in range(1, iterations + 1):
        if iteration > 1:
            run.emit(task_started(run, task, task.attempts, iteration))
        attempt, result = run_agent(run, task, change, prompt, number, resume,
                                    iteration=iteration)
        # Read once an agent has run (its patterns compiled as it loads): not on the way to
        # the first agent, loaded meanwhile by agentloop.run.ahead._made_ahead.
        from agentloop.run.final_message import Report
        from agentloop.run.final_message import parse as parse_report

        report = parse_report(result.text) if result.ok else Report()
        if result.ok:
            run.learnings.record(task.index, iteration, now(), report.progress,
                                 report.learnings, task.summary)
        if not result.ok or report.signal is not None or iterations == 1:
            return Outcome(attempt, change, result, report)
        if iteration == iterations:
            # Spent without TASK_COMPLETE: judged like any failed attempt.
            spent = replace(result, ok=False, error=f"not complete after {iterations} "
                            "iterations (no TASK_COMPLETE)")
            return Outcome(attempt, change, spent, report)
        hand(run, task, Marked(attempt, O.CONTINUED))
        resume = result.session_id
        prompt = CONTINUE_PROMPT.format(progress=report.progress or "(none reported)")
    raise AssertionError("unreachable")


def _abandon(run: Run, task: TaskState, change: Change, number: int,
             exc: BaseException, finished: bool = False) -> None:
    """Stopped midway: not the task's attempt. Its change goes now, so edits the user makes
    before the next run stay theirs. `finished`: its agent had finished (a Ctrl+C in the
    checks): the records keep where its work went, for the next run to bring back."""
    if isinstance(exc, GitUnsafe):
        # Dropping the change runs git in the working copy, which would run what the agent
        # wrote: left open, its files as they are, as a kill leaves it; the next run, once the
        # user moved the agent's git folder away, settles it (agentloop.run.recovery).
        hand(run, task, Uncounted(number, O.INTERRUPTED, S.INTERRUPTED, str(exc)))
        return
    interrupted = isinstance(exc, (Interrupted, KeyboardInterrupt))
    # An error, not a stop (a failing git, a full disk), after the agent ended well: its work
    # is whole, kept aside as a stop's is and brought back by the next run, said in one line.
    failed = finished and not interrupted and isinstance(exc, Exception) and \
        not isinstance(exc, AgentBlocked)
    interrupted = interrupted or failed
    outcome = O.INTERRUPTED if interrupted else (
        S.BLOCKED if isinstance(exc, AgentBlocked) else O.STOPPED)
    hand(run, task, Uncounted(number, outcome, O.INTERRUPTED if interrupted else S.PENDING,
                              str(exc) or "interrupted", stopped=not interrupted))
    drop(run, task, change, number, finished=interrupted and finished)
    if failed and _finished_before(task) is not None:
        run.emit(LaneNote(f"task {task.index}: its agent had finished before the error below; "
                          "its work is kept aside, and the next run brings it back, checks and "
                          "commits it without running the agent again", stop=True))
