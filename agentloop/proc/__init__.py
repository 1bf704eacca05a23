"""The only place that starts processes: `run` for short commands, `stream` for the agent, the
process-group stops behind Ctrl+C and timeouts, and what keeps children from outliving us.

Owns: argv, cwd, env, timeouts, process groups. May import: errors.
"""

from agentloop.proc.commands import Completed, cut_reads, pending_reads, run, start, started
from agentloop.proc.running import after_next_stream, before_next_stream, during_next_wait
from agentloop.proc.signals import deferred, shielded
from agentloop.proc.streamed import STOP_GRACE_SECONDS, Streamed, stop_group, stream

__all__ = ["STOP_GRACE_SECONDS", "Completed", "Streamed", "after_next_stream",
           "before_next_stream", "cut_reads", "deferred", "during_next_wait", "pending_reads",
           "run", "shielded", "start", "started", "stop_group", "stream"]
