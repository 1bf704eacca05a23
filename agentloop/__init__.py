"""agent-loop: let an AI coding agent work through a markdown task list, one change per task."""

__version__ = "0.1.0"
