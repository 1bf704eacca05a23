"""agent-loop: let an AI coding agent work through a markdown task list, one change per task."""

__version__ = "0.1.0"

# What an agent's git commands write in the reflog (git reads GIT_REFLOG_ACTION): the agent's
# environment sets it (agentloop.agents.environment), and the git backend tells by it a commit
# the agent made in your checkout from one you made beside it (agentloop.vcs.git.repo). Here
# because both read it, neither may import the other, and every command loads this module
# already: a module of its own would be one more for `--help` to import.
AGENT_REFLOG_ACTION = "agent-loop agent"
