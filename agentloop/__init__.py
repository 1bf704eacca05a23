"""agent-loop: let an AI coding agent work through a markdown task list, one change per task."""

import _signal  # the C module beneath `signal`: built in, nothing to load
import os
import sys

STARTING_INTERRUPTED = "agent-loop: interrupted while starting; nothing was changed"


def _interrupted_starting(signum: int, frame: object) -> None:
    # Nothing is written yet, nothing is held: one line and out, wherever the import stands.
    try:
        os.write(2, f"\n{STARTING_INTERRUPTED}\n".encode())
    except OSError:  # standard error closed (`2>&-`)
        pass
    os._exit(130)


def _started_as_the_program() -> bool:
    # `agent-loop` (its console script imports us) or `python -m agentloop` (Python names its
    # first argument "-m" while it finds the module); not a library's or a test's import.
    first = (getattr(sys, "argv", None) or [""])[0]   # an embedded Python may have no argv
    return first == "-m" and _run_module() == "agentloop" or \
        os.path.basename(first) == "agent-loop"


def _run_module() -> str | None:
    # The module `python -m` runs, read from Python's own command line: "-m" is all sys.argv
    # says, for `python -m mytool` too, whose package may import ours. Python's options before
    # it are single letters (`-I -m`, `-Bm`, `-Xdev`); one that takes a separate value
    # (`-X importtime`) ends the search: the start then goes without the one-line Ctrl+C,
    # never another program with it.
    command = getattr(sys, "orig_argv", [])
    for at, arg in enumerate(command[1:], start=2):
        if arg.startswith("-m"):
            return arg[2:] or (command[at] if at < len(command) else None)
        if not (arg.startswith("-") and arg[1:].isalpha()):
            if not arg.startswith("-X") or arg == "-X":
                return None
        elif arg.endswith("m"):  # `-Bm agentloop`
            return command[at] if at < len(command) else None
    return None


# Started as the program, a Ctrl+C from here on ends in one line, exit 130, never Python's
# traceback of an import cut short (15-50 ms of every start), until agentloop.__main__ holds
# the stops back and gives Ctrl+C to Python's own handler again (ctrl_c_raises). An ignored
# Ctrl+C (a background job of a script) stays ignored.
if _started_as_the_program() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_starting)


def left_alone(signum: int) -> bool:
    """Whether agent-loop leaves stop signal `signum` as it is: ignored (as the run started: a
    `nohup` run's SIGHUP, a script's background job's Ctrl+C; or while cleanup that must finish
    runs, agentloop.proc.signals.shielded) or handled outside Python (None): an ignored stop
    stays ignored."""
    return _signal.getsignal(signum) in (None, _signal.SIG_IGN)


def ctrl_c_raises() -> None:
    """Ctrl+C raises KeyboardInterrupt again (Python's own handler), where the start's handler
    had it: agentloop.__main__ calls it once it holds the stops back."""
    if _signal.getsignal(_signal.SIGINT) is _interrupted_starting:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)


__version__ = "0.1.0"

# What an agent's git commands write in the reflog (git reads GIT_REFLOG_ACTION): the agent's
# environment sets it (agentloop.agents.environment), and the git backend tells by it a commit
# the agent made in your checkout from one you made beside it (agentloop.vcs.git.reflog). Here
# because both read it, neither may import the other, and every command loads this module
# already: a module of its own would be one more for `--help` to import.
# One mark for each run (each process: all its lanes' agents share it), a token drawn as it
# starts: a run started from a shell that has a mark already (an agent of another run's, or a
# person who copied one's environment) hands its agents its own, and your git beside them,
# which carries the other one, is not taken for theirs. Random, not the pid: a pid comes back,
# and is often the same in each new container. (Python loads `os` before any of our modules.)
AGENT_REFLOG_ACTION = f"agent-loop agent {os.urandom(4).hex()}"


def lane_mark(lane: str) -> str:
    """The mark of the agents that work in the lane named `lane` (its folder's name): the run's,
    then the lane's, so what an agent's git did in your checkout is said by its own lane's
    check, never by another lane's whose step it fell in (agentloop.vcs.git.reflog)."""
    return f"{AGENT_REFLOG_ACTION} {lane}"
