"""Reading a plan: a task file's markdown -> frozen Task records, in every format people write
(the design's own, ralph, ralphex, superpowers, spec-kit, Kiro), with what was ignored and why,
and the plan `--init` writes.

Owns: parsing only; it knows no state, no run, no agent. May import: errors.
"""
