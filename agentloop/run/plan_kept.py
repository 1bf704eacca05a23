"""The plan as the run last read it, kept in memory so it can never vanish silently: an agent's
`jj undo` (or `jj op restore`, `git clean`, `git checkout`) can delete a task file jj or git had
not recorded yet. The plan is the user's file and never part of a task's change, so no VCS has
a copy: this one is put back on disk, as the run last read it, and the run says so.

A plan you renamed while the run worked (`git mv tasks.md plan.md`: the same bytes at another
name beside it) is never put back: a second copy by the old name would be a second plan, whose
next run pays for every task again. The run starts no new task and says where the plan went;
a run of the new name takes this plan's state over (agentloop.state.project), its finished
tasks done."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agentloop.run.context import Run


def current(run: Run) -> Path:
    """The plan's file now: where the user renamed it while the run worked (found by the bytes
    the run last read, should the controller not have looked since; renamed again, or back,
    found beside where it went), else its own."""
    path = run.shared.plan_moved or run.project.task_file
    if os.path.lexists(path) or run.shared.plan_bytes is None:
        return path
    renamed = _renamed(path, run.shared.plan_bytes)
    return path if renamed is None else path.parent / renamed


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
    shown = run.project.shown(path)
    renamed = _renamed(path, data)
    if renamed is not None:
        if run.shared.plan_moved is not None:
            return None   # said once
        run.shared.plan_moved = path.parent / renamed
        # Saved under its new name: the closing lines and `--status` name the file there is.
        run.state.task_file = run.project.store.relative(run.shared.plan_moved)
        new = run.project.shown(run.shared.plan_moved)
        return (f"{shown} was renamed {new} while this run worked (the same text), so it is not "
                f"put back: no new task starts; `agent-loop {new}` goes on with this plan, its "
                "finished tasks done")
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
