"""What agent-loop keeps in `.agent-loop/`: the versioned state (schema, upgrades, store, journal),
where a plan's state lives (the project), matching saved records to an edited plan, receipts and
learnings.

Owns: every file under `.agent-loop/` except logs and events, which the run writes.
May import: plan, vcs (to find the repository root), files, errors.
"""
