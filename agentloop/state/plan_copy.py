"""The plan's bytes as the last run read them, kept on disk in its state folder.

A run keeps the plan it read in memory and puts it back should it vanish (agentloop.run.
plan_kept): a `jj undo` in a colocated checkout rolls back jj's snapshot of an untracked plan,
and deletes it. A run killed (kill -9) cannot put it back, and the next one found no plan. So
each version a run reads is also written here, where no VCS snapshots it (`.agent-loop/` is
ignored), and a run that finds its plan gone says where this copy is.

It says so and does not put the plan back itself: a plan missing before a run may be one you
deleted or renamed on purpose (the rename's state is taken over by the new name, whose next
run would meet a second plan of the same tasks by the old one); one line, with the command that
puts it back, lets the person who knows decide, and costs no agent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop.errors import StateError, TaskFileError
from agentloop.files.digest import hexdigest
from agentloop.files.scratch import scratch
from agentloop.files.shown import typed_path

if TYPE_CHECKING:
    from agentloop.state.project import Project

NAME = "plan-as-read.md"


def keep(folder: Path, data: bytes) -> None:
    """`data`, the plan's bytes a run has just read, written whole over the copy in the plan's
    state folder `folder`. A failure to write (a full disk) is no failure of the run: the copy
    in memory still puts the plan back while the run lives."""
    try:
        # Named as the state's scratch files, which the next run's lock sweeps (a kill here);
        # a plan's mode, as the `cp` said for a plan gone gives it to the plan it puts back.
        fd, tmp = scratch(folder, ".state-plan-", ".tmp", mode=0o666)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, folder / NAME)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def said_if_kept(project: Project) -> None:
    """Raise gone's line for a plan gone before a run, when the last run kept a copy of it;
    return when it did not (the caller says the plan is missing)."""
    said = gone(project)
    if said is not None:
        raise said from None


def gone(project: Project) -> TaskFileError | None:
    """The one line for a plan gone before a run, when its state folder holds its copy: where
    the copy is, and the command that puts it back, both as typed from where the user stands.
    None when the plan is there or no copy is."""
    folder = project.store.dir
    if os.path.lexists(project.task_file):
        return None
    try:
        data = (folder / NAME).read_bytes()
        saved = project.store.load()
    except (OSError, StateError):
        return None
    same = saved is not None and saved.task_file_hash == "sha256:" + hexdigest(data)
    which = ("the plan its state records (the same SHA-256)" if same else
             "a version its state does not record (saved as the run was stopped?)")
    plan, copy = project.shown(project.task_file), project.shown(folder / NAME)
    return TaskFileError(
        f"task file {plan} does not exist; the last run kept the plan as it read it, "
        f"{which}, in {copy}: unless you moved or deleted the plan on purpose (a `jj undo` "
        f"can delete an untracked one), `cp {typed_path(copy)} {typed_path(plan)}` puts it "
        "back, then run agent-loop again")
