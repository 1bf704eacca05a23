"""The closed set of a task's status, and the status changes allowed (a table). A change not in
the table is a bug of agent-loop's, raised where it happens. An attempt's outcome is in
agentloop.state.outcome (`--status` reads statuses, never outcomes, and each member of an enum
costs its class statement time).

The members are `str`s, so the JSON on disk keeps the same words a state file of an earlier
version holds, and such a file loads unchanged.
"""

from __future__ import annotations

from enum import Enum

# typing for the checker only: --status imports this module, not typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Word(str, Enum):
    """A member prints, formats and serialises as its word ("completed"), not as its name."""

    # The member is the str of its word, so str's own methods say it: `.value` is a Python-level
    # property of Enum's, and --status formats a plan's every status with it.
    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)

    # Enum hashes a member by its name: a dict keyed by the word must find the member too.
    __hash__ = str.__hash__


class TaskStatus(Word):
    """Where a task stands."""

    PENDING = "pending"          # waits its turn
    RUNNING = "running"          # an attempt is open (or a killed run left one open)
    COMPLETED = "completed"      # done, its change in the history
    FAILED = "failed"            # out of attempts, or the advisor said stop
    INTERRUPTED = "interrupted"  # stopped midway (Ctrl+C, a kill): runs again, no attempt spent
    SKIPPED = "skipped"          # ticked in the plan: never run
    BLOCKED = "blocked"          # the agent said it needs a person
    UNAPPROVED = "unapproved"    # the reviewer did not approve; its change kept for a person
    CONFLICTED = "conflicted"    # a lane's change that does not fit the main line, kept
    HELD = "held"                # finished, but your edits kept it off the main line past the
                                 # lane wait: kept on its lane, it lands on the next run
    LANDING = "landing"          # finished and committed in its lane; its commit is being put
                                 # on your branch beside the next task's agent (a run stopped
                                 # before that ended lands it first on the next run)


S = TaskStatus

# Nothing left to do for the task: the groups that wait for its group may start.
FINISHED = frozenset({S.COMPLETED, S.SKIPPED})
# Its change stays in the history (done, or kept for a person to judge).
KEPT = frozenset({S.COMPLETED, S.UNAPPROVED})
# A fleet job settled it: it will not run again without a person.
SETTLED = FINISHED | {S.UNAPPROVED}
# Finished by an agent, its change not on the main line yet: a run lands it without an agent, so
# every run takes it in, whatever it selects, before a later task of its group can land. A
# person's tick settles it (skipped, its commit kept where it was, not landed).
SETTLING = frozenset({S.LANDING, S.HELD, S.CONFLICTED})
# An attempt was open when the run ended: its change may hold partial work.
OPEN = frozenset({S.RUNNING, S.INTERRUPTED})
# Still to run in a later run.
TO_RUN = frozenset({S.PENDING, S.RUNNING, S.INTERRUPTED})

# Every status a task may move to from each status. Staying is always allowed. Every status
# may go back to pending (--again, a reworded task, an integration that could not land it) and
# to skipped (its box ticked), except that a done task is never skipped after the fact, nor one
# not approved (its change is in the history: ticked, it is completed).
_BACK = {S.PENDING, S.SKIPPED}
TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    S.PENDING: frozenset({S.RUNNING} | _BACK),
    S.RUNNING: frozenset({S.COMPLETED, S.FAILED, S.INTERRUPTED, S.BLOCKED, S.UNAPPROVED,
                          S.CONFLICTED, S.HELD, S.LANDING} | _BACK),
    # Completed: an earlier run committed it and stopped before its record said so (a lane
    # ended between the agent and the record, ledger.left_open); the next run finds the commit.
    S.INTERRUPTED: frozenset({S.RUNNING, S.COMPLETED} | _BACK),
    S.FAILED: frozenset({S.RUNNING} | _BACK),
    S.BLOCKED: frozenset({S.RUNNING} | _BACK),
    # Completed, or skipped: its box ticked by the person it was kept for (agentloop.state.
    # reconcile): approved, or resolved by hand (not landed).
    S.UNAPPROVED: frozenset({S.RUNNING, S.PENDING, S.COMPLETED}),
    S.CONFLICTED: frozenset({S.COMPLETED, S.RUNNING, S.PENDING, S.HELD, S.SKIPPED}),
    # Landed first by a later run from its lane, or found to conflict there, as a conflicted
    # task is.
    S.HELD: frozenset({S.COMPLETED, S.CONFLICTED, S.RUNNING} | _BACK),
    # Landed (or, should the checkout refuse it, held or conflicted, as a landing that did not
    # run beside the next agent would have been).
    S.LANDING: frozenset({S.COMPLETED, S.HELD, S.CONFLICTED} | _BACK),
    # A fleet job's completed task whose change does not fit the main line at --integrate.
    S.COMPLETED: frozenset({S.PENDING, S.CONFLICTED}),
    S.SKIPPED: frozenset({S.PENDING}),
}


def as_left_by_a_dead_run(tasks: list[Any]) -> None:
    """No run lives (a kill left the records): a task it left running is interrupted, as the
    next run will settle it, and what its unfinished agent runs spent is not known (as that run
    will say: "or more"), where 0.0 read as known. For what --status shows; the records on disk
    stay as they are (agentloop.standing.unstarted then takes a run whose agent never said a
    word as known: nothing spent)."""
    for task in tasks:
        if task.status == S.RUNNING:
            task.status = S.INTERRUPTED
            for record in task.history:
                if record.outcome == "running" and record.exit_code is None:
                    record.cost_known = False


class BadTransition(RuntimeError):
    """A task record was asked to change in a way the table does not allow: a bug of ours, so
    not an AgentLoopError (the CLI treats it as a crash, with its traceback in a log)."""


def allowed(old: str, new: str) -> bool:
    """Whether a task may go from status `old` to `new`."""
    return old == new or TaskStatus(new) in TRANSITIONS[TaskStatus(old)]


def check(old: str, new: str, index: int = 0) -> TaskStatus:
    """`new` as a TaskStatus when the move from `old` is in the table; else BadTransition."""
    if old not in WORDS or new not in WORDS or not allowed(old, new):
        raise BadTransition(f"internal error: task {index} cannot go from {str(old)!r} to "
                            f"{str(new)!r}")
    return TaskStatus(new)


# Every status word, as a record on disk holds it.
WORDS = frozenset(s.value for s in TaskStatus)
