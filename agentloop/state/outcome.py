"""The closed set of how one agent run of a task (an Attempt record) ended; a str on disk, as a
task's status is (agentloop.state.status)."""

from __future__ import annotations

from agentloop.state.status import Word


class AttemptOutcome(Word):
    """How one agent run of a task (an Attempt record) ended."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    LIMITED = "limited"          # a usage limit: no attempt
    BLOCKED = "blocked"
    CONTINUED = "continued"      # an iteration that went on in the same session
    STOPPED = "stopped"          # the agent reported a fatal error, or the run stopped
    PAUSED = "paused"            # failed after the whole machine slept: no attempt
    BUDGET = "budget"            # cut short by --task-budget
    APPROVED = "approved"        # a reviewer's run that approved
    FEEDBACK = "feedback"        # a reviewer's run that asked for changes
    RESOLVED = "resolved"        # a conflict-fixing run that resolved the conflict
    UNAPPROVED = "unapproved"
    CONFLICTED = "conflicted"
    HELD = "held"
