"""A parallel run's finished task whose change does not fit the main line (another group changed
the same lines first): the group's own session, which knows the change best, resolves it in the
group's worktree, and the user's checks run again; at most ROUNDS rounds.

Unresolved, nothing is lost: the task is `conflicted` (not completed, not failed), its change
stays on the lane's branch, the group's later tasks wait, and the message says how to look at it
and how to go on after resolving it by hand. The next run tries to land it again first.

A landing that does not go through for another reason comes to a decision here too (`settling`):
held on the user's edits past the lane wait (`held`, the group stops, the next run lands it), or
stopped by what the agent did outside its task (a breach).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from agentloop.errors import RunStopped
from agentloop.options.record import continue_args
from agentloop.run.agent_run import run_agent
from agentloop.run.checks import run_checks
from agentloop.run.context import Run
from agentloop.run.decisions import Breached, Conflicted, Dropped, Held, Marked
from agentloop.run.handover import hand
from agentloop.run.lane_tag import LaneNote
from agentloop.run.verify import check_log, task_checks
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import Attempt, TaskState
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.choose import IntegrationConflict, LandingHeld, LaneBreach
from agentloop.vcs.protocol import Change, LandsLeft, ResolvesConflicts

ROUNDS = 2
PROMPT = """\
Your change for the task above does not fit the main line: other groups changed the same \
lines and their work landed first. Your working copy now holds the main line as it is, with \
your change applied on top; git marked each conflict (<<<<<<< / ======= / >>>>>>>) in:
{files}

What landed on the main line from the other groups meanwhile:
{others}

Resolve every conflict so that both your change and theirs keep working: edit the files and \
remove every marker. Do not commit, and run no git command that moves HEAD. End with a short \
summary of how you resolved it."""

# A conflicted file with no marker in it: one side deleted it and the other changed it (your
# `git revert` of the task that made it, say), or git could not merge its bytes. Said as it is,
# or an agent that looks for the markers finds none, does nothing, and its version stands.
UNMARKED = (" (no marker in it: deleted on one side and changed on the other, or not text; "
            "decide whether it stays, as it is now, or goes)")


def _lane_vcs(run: Run) -> ResolvesConflicts | None:
    return run.vcs if isinstance(run.vcs, ResolvesConflicts) else None


class GroupConflicted(RunStopped):
    """A group's task could not be put on the main line: the group stops, the others go on."""


class GroupHeld(RunStopped):
    """A group's finished task waited too long to land on the user's edits: the group stops,
    its work kept on its lane, the others go on."""


def resolve(run: Run, task: TaskState, change: Change, session: str | None,
            conflict: IntegrationConflict, attempt: Attempt, intro: str = "") -> Change:
    """Rounds of the group's session resolving `conflict`; the landed change, or
    GroupConflicted with the task marked `conflicted`. `intro`: what a fresh session (None)
    is told first, since it never saw the task (run.replay: a fleet job's task)."""
    vcs = _lane_vcs(run)
    assert vcs is not None, "a conflict outside a parallel run's lane"
    number = attempt.number
    first = conflict.commit  # the task's own commit: kept on the lane's branch whatever happens
    noted = conflict.note  # what the agent did to your checkout: kept in the task's record
    for round_ in range(1, ROUNDS + 1):
        files = vcs.open_conflict(conflict)
        run.emit(LaneNote(f"task {run.shared.number(task)} conflicts with the main line in "
                          f"{', '.join(files)}: the group's session resolves it "
                          f"(round {round_} of {ROUNDS})"))
        marked = set(vcs.markers_left(files))
        prompt = PROMPT.format(files="\n".join(f"- {f}" + ("" if f in marked else UNMARKED)
                                               for f in files),
                               others=_others(run, vcs, conflict, files))
        if intro and session is None:
            prompt = intro + prompt
        fixing, result = run_agent(run, task, change, prompt, number, session,
                                   round_=round_, kind="conflict")
        session = result.session_id or session
        hand(run, task, Marked(fixing, O.RESOLVED if result.ok else O.FAILED, save=False))
        if not result.ok or vcs.markers_left(files) or not _checks_pass(run, task, number,
                                                                         round_):
            continue
        try:
            return vcs.close_conflict(conflict)
        except IntegrationConflict as again:  # the main line moved on meanwhile
            conflict = again
    vcs.drop_conflict(IntegrationConflict(first, conflict.files, conflict.onto))
    reason = stuck_message(run, vcs, task, conflict.files)
    if noted:
        reason += f"; task {task.index}: {noted}"
    hand(run, task, Conflicted(attempt, first, reason, session))
    raise GroupConflicted(f"task {run.shared.number(task)} ({task.group}) conflicts with the "
                          "main line")


def land_kept(run: Run, task: TaskState) -> Change:
    """A task an earlier run left `conflicted` (or `held`): its lane's commit (or a person's
    resolution of it there) landed now, with the group's session resolving what still
    conflicts. One left `landing` (its landing beside the next agent refused by the checkout,
    or cut short by a stop): its own commit, whatever the lane holds since."""
    vcs = _lane_vcs(run)
    if vcs is None or not task.history:
        if task.status == S.LANDING:
            raise RunStopped(f"task {run.shared.number(task)} is landing: its commit "
                             f"{task.change_id} waits "
                             "in its lane for a run in lanes (not --workplace checkout) to "
                             "land it")
        raise RunStopped(f"task {run.shared.number(task)} is {task.status}: {task.error}")
    try:
        if task.status == S.LANDING and isinstance(vcs, LandsLeft):
            return vcs.land_left(task.change_id or "")
        return vcs.land_again(vcs.kept(task.change_id or ""))
    except IntegrationConflict as conflict:
        last = task.history[-1]
        return resolve(run, task, Change(change_id=conflict.commit), task.session_id, conflict,
                       last)


def stuck_message(run: Run, vcs: ResolvesConflicts, task: TaskState, files: tuple[str, ...]) -> str:
    """What a person does with a conflicted task: where it is, how to look, how to go on."""
    where = run.project.store.relative(vcs.root)
    return f"conflicts with the main line in {', '.join(files) or 'some files'}; " + \
        vcs.help_lines(where)


def _others(run: Run, vcs: ResolvesConflicts, conflict: IntegrationConflict,
            files: list[str]) -> str:
    """The other groups' tasks that changed these files on the main line."""
    shas = set(vcs.main_commits_touching(conflict.commit, conflict.onto, files))
    lines = [f"- task {t.index} ({t.group}): {t.summary}" for t in run.state.tasks
             if t.change_id in shas and t.group != run.lane]
    return "\n".join(lines) or "- (changes made outside this run)"


def _checks_pass(run: Run, task: TaskState, number: int, round_: int) -> bool:
    commands = task_checks(run.options, task)
    if not commands:
        return True
    log = check_log(run, task, number)
    runs = run_checks(commands, run.cwd, log, run.options.check_timeout, round_,
                      run.project.store.relative(log))
    return all(r.passed for r in runs)


@contextmanager
def settling(run: Run, task: TaskState, record: Attempt) -> Iterator[None]:
    """A lane's landing (a task's finish, or one an earlier run left): what its VCS checks
    found comes to a decision. Held on the user's edits past the lane wait: `Held`, and the
    group stops (GroupHeld). The agent acted outside its task: `Breached`, and the group stops
    with the line that says what happened and how to repair it (LaneBreach)."""
    try:
        yield
    except LandingHeld as held:
        # The record says how to finish it: the next run lands it, paying no agent again.
        import shlex  # a held landing's line only

        again = shlex.join(["agent-loop", *continue_args(run.options.command)]) \
            if run.options.command else "agent-loop"
        reason = f"{held}: `{again}`"
        hand(run, task, Held(record, held.commit, reason))
        if held.stop is not None:  # the run was stopped while it waited: it stops now
            raise held.stop from None
        raise GroupHeld(f"task {run.shared.number(task)} ({task.group}) is {reason}") from None
    except LaneBreach as breach:
        breached(run, task, record, breach)
        raise


def breached(run: Run, task: TaskState, record: Attempt, breach: LaneBreach) -> None:
    """The stop `breach` recorded: the attempt does not count, the lane stays as it is; the
    finished agent's work the VCS kept aside (`breach.kept`) is recorded as the attempt's, for
    the next run to bring back without paying the agent again."""
    hand(run, task, Breached(record, str(breach)))
    if breach.kept:
        hand(run, task, Dropped("", record.number, breach.kept, finished=True, said=True))
