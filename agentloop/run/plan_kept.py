"""The plan as the run last read it, kept in memory so it can never vanish silently: an agent's
`jj undo` (or `jj op restore`, `git clean`, `git checkout`) can delete a task file jj or git had
not recorded yet. The plan is the user's file and never part of a task's change, so no VCS has
a copy: this one is put back on disk, as the run last read it, and the run says so."""

from __future__ import annotations

import os
import tempfile

from agentloop.run.context import Run


def keep(run: Run, data: bytes) -> None:
    """Remember `data` as the plan's bytes the run has read (and understood)."""
    run.shared.plan_bytes = data


def restore(run: Run) -> str | None:
    """Put the plan back on disk when it is gone and the run holds its text; the note that
    says so (None when the plan is there, or there is nothing to put back)."""
    path = run.project.task_file
    data = run.shared.plan_bytes
    if data is None or os.path.lexists(path):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all: a plan half written would read as a plan with tasks missing.
        fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(scratch, path)
    except OSError as exc:
        return (f"{run.project.shown(path)} vanished from disk while this run worked, and "
                f"putting it back failed ({exc.strerror})")
    return (f"{run.project.shown(path)} vanished from disk while this run worked (an agent's "
            "`jj undo`?); put back as this run last read it")
