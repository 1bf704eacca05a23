"""agent-loop: let an AI coding agent work through a markdown task list, one change per task."""

import os

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
