"""Past one machine: one group run as a job of a CI matrix (`--group G --push REMOTE`), and
`--integrate --from REMOTE`, which brings every finished group's commits onto the current
branch with the same landing and conflict handling as a parallel run.

Owns: what a job pushes and an integration fetches. May import: run, state, plan, vcs, proc.
"""
