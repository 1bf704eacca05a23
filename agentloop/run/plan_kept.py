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
    shown = run.project.shown(path)
    renamed = _renamed(path, data)
    if renamed is not None:
        return (f"{shown} vanished from disk while this run worked, and {renamed} holds the "
                f"same text (renamed?); {shown} is put back as this run last read it, and "
                f"this run goes on with it: once it ends, remove the copy you do not want")
    why = "an agent's `jj undo`?" if run.vcs.name == "jj" else "deleted, or an agent's `git clean`?"
    return f"{shown} vanished from disk while this run worked ({why}); put back as this run " \
        "last read it"


def _renamed(path: os.PathLike[str], data: bytes) -> str | None:
    """The name of a file beside the plan `path` that holds exactly the plan's bytes (the plan
    renamed, or moved aside), None when there is none."""
    folder = os.path.dirname(path)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_size == len(data) \
                    and entry.path != os.fspath(path):
                with open(entry.path, "rb") as found:
                    if found.read() == data:
                        return entry.name
        except OSError:
            continue
    return None
