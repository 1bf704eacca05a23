"""Driving a run: wiring it together, the loop over tasks, one task's attempt, the agent runs of
it (developer, fixes, reviewer), the user's checks, retry advice, waits, and the events it emits.

Owns: every decision of a run. It prints nothing: the console subscribes to its events.
May import: state, plan, agents, vcs, proc, files, options, errors.
"""
