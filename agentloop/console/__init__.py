"""What the user reads: a run's events as console lines (a live line on a terminal), and
`--status`, `--dry-run` and a run's closing lines as text or JSON.

Owns: every word printed about a run. Decides nothing. May import: app, run (its events and
values), state, errors.
"""
