"""The tool's own exceptions: one root, a few kinds, each with its exit code.

Only the CLI catches these; everything below raises them with a message that a user can act on.
"""

from __future__ import annotations

import signal

# types only for the checker: --status imports this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType


class AgentLoopError(Exception):
    """A failure the user can cause or fix; printed as one line, exit 1."""

    exit_code = 1
    # The plan's file (full paths) before and after you renamed it while the run worked
    # (agentloop.run.plan_kept), so the command that continues the run names the new one; a
    # Ctrl+C's KeyboardInterrupt carries it the same way.
    renamed: tuple[str, str] | None = None
    # What was done before the failure that its line alone would leave unsaid (a killed run's
    # attempt rolled back into a commit, then your dirty checkout refused): said first.
    said_first: tuple[str, ...] = ()


def say_first(exc: BaseException, lines: tuple[str, ...]) -> None:
    """`lines` said just before `exc`'s own line, ahead of those it carries already (once
    each): on any exception, a Ctrl+C's and an internal error's too, which
    agentloop.console.stops reads them off as it reads an AgentLoopError's."""
    carried: tuple[str, ...] = getattr(exc, "said_first", ())
    new = tuple(line for line in lines if line not in carried)
    if new:
        setattr(exc, "said_first", (*new, *carried))  # noqa: B010 - not every class has it


class UsageError(AgentLoopError):
    """Options that cannot work together; found before anything is touched."""

    exit_code = 2


class SettingsError(UsageError):
    """A settings file or variable that cannot be used: said with where it was written."""


class TaskFileError(AgentLoopError):
    """The task file is missing, unreadable, not UTF-8 or holds no tasks."""


class StateError(AgentLoopError):
    """state.json cannot be read, is from a newer version, or does not match the task file."""


class StateLocked(AgentLoopError):
    """Another agent-loop run holds the lock on this folder."""


class ProcessError(AgentLoopError):
    """An external program could not be started, timed out or failed."""

    def __init__(self, message: str, argv: list[str] | None = None, returncode: int | None = None,
                 output: str = "") -> None:
        super().__init__(message)
        self.argv = argv or []
        self.returncode = returncode
        self.output = output


class ProgramNotFound(ProcessError):
    """An external program (claude, jj, git) is not installed or not on PATH."""


class VcsError(AgentLoopError):
    """The version control step failed or the repository is not in a state we can work in."""


class ConflictLeft(VcsError):
    """The agent left files unmerged, git's conflict markers in them, with no command under
    way (a `git stash pop` that conflicted): its work is not whole, so it is not committed,
    and a stop never keeps it as finished work for the next run to land."""


class AgentBlocked(AgentLoopError):
    """The agent cannot run at all (not logged in, refused as root, ...): the run stops."""


class SandboxUnavailable(AgentLoopError):
    """--sandbox was asked for and this machine cannot make one: the run refuses to start."""


class RunStopped(AgentLoopError):
    """The run stopped early on purpose (limits, stuck agent, persistent API trouble)."""


class GitUnsafe(RunStopped):
    """The agent left the working copy where agent-loop's own git would run what it wrote (a
    submodule's `.git` naming a git folder of its own, that could not be moved aside): the stop
    runs no git there. Its attempt's change stays open and its files as they are, for the next
    run to settle as a killed run's (agentloop.run.recovery)."""


class LandingWithheld(RunStopped):
    """A lane's finished task not landed: another lane stopped on a breach of the main line
    (agentloop.vcs.breach), which a landing would bury; its work is kept for the next run."""


class BudgetReached(RunStopped):
    """The run's spending reached --budget; `spent` says how much."""

    def __init__(self, message: str, spent: float, budget: float) -> None:
        super().__init__(message)
        self.spent = spent
        self.budget = budget


class CheckFailed(AgentLoopError):
    """A user's check fails before any task ran: the run stops before any agent is paid for."""


class Interrupted(AgentLoopError):
    """The user pressed Ctrl+C or the process got SIGTERM."""

    exit_code = 130


# A run that went to its end, but left tasks it set out to run failed, blocked or unapproved.
UNFINISHED_EXIT = 4
# An error of agent-loop's own (a bug): its traceback goes to a crash log.
INTERNAL_EXIT = 3

# Every exit code and what it tells a script; the reference page of exit codes is read off this
# table and the exceptions above (docs/reference/exit-codes.md), so it is the one place to change.
EXIT_CODES = {
    0: "every task the run set out to run ended completed (or skipped as asked)",
    1: "a problem you can fix, or a run that stopped early (limits, stuck, budget, a blocking "
       "agent error): the message says what and how to go on",
    2: "a usage error: options that cannot work together, a malformed option value (--task 5-3) "
       "or a bad setting, found before anything is touched",
    INTERNAL_EXIT: "an internal error: the traceback goes to ~/.agent-loop-crash.log",
    UNFINISHED_EXIT: "the run went to its end, but some task it set out to run ended failed, "
                     "blocked, unapproved, conflicted or held (the last lines name them); "
                     "--integrate: some group is conflicted or not finished, or its job "
                     "never ran (a group of a later stage with no job yet is not run yet: 0)",
    Interrupted.exit_code: "interrupted (Ctrl+C, SIGTERM, SIGHUP): the state is saved and the "
                           "same command resumes",
}


# Python's import machinery is Python code that takes its locks (the global import lock, one
# lock per module) a few bytecodes before the `try` or `with` that gives them back, and a
# signal's handler runs between any two of them: a KeyboardInterrupt raised there leaves the
# lock held by the main thread for good (CPython 3.11: about one interrupted import in 25). The
# main thread takes it again freely, but every other thread that imports after that waits
# forever, and so does whatever waits for that thread: a stopped run never exited.
IMPORT_MACHINERY = "<frozen importlib._bootstrap"


class _PutOff:
    """The stop signal the import machinery put off (main thread only)."""

    signum: int = signal.SIGINT


def stop(signum: int, frame: FrameType | None) -> None:
    """The handler of Ctrl+C, SIGTERM and SIGHUP: the stop every layer knows, KeyboardInterrupt;
    inside Python's import machinery it comes again a millisecond later, until it finds the
    main thread outside (in the imported module's own code, at the latest once it is done)."""
    if frame is not None and frame.f_code.co_filename.startswith(IMPORT_MACHINERY):
        # A timer's SIGALRM, not the stop sent again: raise_signal and os.kill run the handler
        # before they return, here, where it would raise inside this very handler.
        if signum != signal.SIGALRM:
            _PutOff.signum = signum
        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, 0.001)
        return
    if signum == signal.SIGALRM:
        # Through the handler the stop has now: cleanup begun meanwhile ignores it
        # (agentloop.proc.signals.shielded), a block that holds stops back keeps it.
        signal.raise_signal(_PutOff.signum)
        return
    raise KeyboardInterrupt
