"""The plan as the run last read it, kept in memory so it can never vanish silently: an agent's
`jj undo` (or `jj op restore`, `git clean`, `git checkout`) can delete a task file jj or git had
not recorded yet. The plan is the user's file and never part of a task's change, so no VCS has
a copy: this one is put back on disk, as the run last read it, and the run says so.

A plan you renamed while the run worked (`git mv tasks.md plan.md`: the very file the run last
read, its bytes and its inode, at another name beside it) is never put back: a second copy by the
old name would be a second plan, whose next run pays for every task again. The run starts no new
task and says where the plan went; a run of the new name takes this plan's state over
(agentloop.state.project), its finished tasks done. A copy beside it (`cp tasks.md tasks.md.bak`)
holds the same bytes in another file: no rename, so the plan is put back."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agentloop.ondemand import dataclass
from agentloop.run.context import FileId, Run


@dataclass(frozen=True)
class Restored:
    """What `restore` did: the line that says so; the plan's name for the state (relative to
    the root), for the one writer of the state to save (agentloop.run.ledger.plan_renamed),
    "" when it stays; and whether the plan was renamed (not put back)."""

    note: str
    name: str = ""
    moved: bool = False


def current(run: Run) -> Path:
    """The plan's file now: where the user renamed it while the run worked (found as the file
    the run last read, should the controller not have looked since; renamed again, or back,
    found beside where it went), else its own."""
    path = run.shared.plan_moved or run.project.task_file
    if os.path.lexists(path) or run.shared.plan_bytes is None:
        return path
    renamed = _renamed(path, run.shared.plan_bytes, run.shared.plan_id)
    return path if renamed is None else path.parent / renamed


WORKED = "while this run worked"
DURING = "while an agent ran (by it, or you)"


def when(run: Run, path: Path) -> str:
    """When the plan found changed was written, as its lines say it: DURING when its last
    write fell while an agent ran (one working without --sandbox can write it, and time alone
    cannot tell its write from yours, as with your checkout's files), else WORKED. From the
    file's time: no read."""
    try:
        written = os.stat(path).st_mtime_ns
    except OSError:
        return WORKED
    with run.shared.lock:
        during = any(start <= written and (not end or written <= end)
                     for start, end in run.shared.agent_runs)
    return DURING if during else WORKED


def keep(run: Run, data: bytes, file: FileId | None) -> None:
    """Remember `data` as the plan's bytes the run has read (and understood), from the file
    `file` (its device and inode; None when unknown: then no file is taken for the plan
    renamed)."""
    run.shared.plan_bytes = data
    run.shared.plan_id = file


def file_id(stat: os.stat_result) -> FileId:
    """Which file `stat` is: its device and inode (a rename keeps both, a copy does not)."""
    return stat.st_dev, stat.st_ino


def restore(run: Run) -> Restored | None:
    """Put the plan back on disk when it is gone and the run holds its text; what was done
    (None when the plan is there, there is nothing to put back, or its rename was said)."""
    path = run.project.task_file
    data = run.shared.plan_bytes
    if data is None or os.path.lexists(path):
        return None
    shown = run.project.shown(path)
    renamed = _renamed(path, data, run.shared.plan_id)
    if renamed is not None:
        if run.shared.plan_moved is not None:
            return None   # said once
        run.shared.plan_moved = path.parent / renamed
        new = run.project.shown(run.shared.plan_moved)
        # The state is to be saved under the new name (by the caller, through the ledger):
        # the closing lines and `--status` name the file there is.
        return Restored(f"{shown} was renamed {new} while this run worked (the same text), "
                        f"so it is not put back: no new task starts; `agent-loop {new}` goes on "
                        "with this plan, its finished tasks done",
                        run.project.store.relative(run.shared.plan_moved), moved=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all: a plan half written would read as a plan with tasks missing.
        fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            written = file_id(os.fstat(out.fileno()))
        os.replace(scratch, path)
    except OSError as exc:
        return Restored(f"{run.project.shown(path)} vanished from disk while this run worked, "
                        f"and putting it back failed ({exc.strerror})")
    keep(run, data, written)   # the file now there: renamed later, it is still the plan
    if run.shared.plan_moved is not None:
        # Its rename was said, then the renamed file deleted: the plan is back by its own name,
        # and so is the state (no line nor --status names the file gone).
        went = run.project.shown(run.shared.plan_moved)
        run.shared.plan_moved = None
        return Restored(f"{shown} was renamed {went} while this run worked, then {went} "
                        f"deleted; {shown} put back as this run last read it: `agent-loop "
                        f"{shown}` goes on with this plan", run.project.store.relative(path))
    why = "an agent's `jj undo`?" if run.vcs.name == "jj" else "deleted, or an agent's `git clean`?"
    return Restored(f"{shown} vanished from disk while this run worked ({why}); put back as "
                    "this run last read it")


def said_back(run: Run, notes: list[str]) -> None:
    """The plan put back after its rename was said: the line that said where it went (and
    that `agent-loop NEW` goes on) is no longer so, and is dropped from `notes`."""
    said = f"{run.project.shown(run.project.task_file)} was renamed "
    notes[:] = [n for n in notes if not (n.startswith(said) and "so it is not put back" in n)]


def _renamed(path: os.PathLike[str], data: bytes, file: FileId | None) -> str | None:
    """The name of a file beside the plan `path` that is the file the run last read (`file`)
    and still holds its bytes (the plan renamed, or moved aside), None when there is none. A
    file with the same bytes but another inode is a copy (a backup you made): the plan is
    still gone."""
    if file is None:
        return None
    folder = os.path.dirname(path)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        try:
            if not entry.is_file(follow_symlinks=False) or entry.path == os.fspath(path):
                continue
            stat = entry.stat(follow_symlinks=False)
            if file_id(stat) == file and stat.st_size == len(data):
                with open(entry.path, "rb") as found:
                    if found.read() == data:
                        return entry.name
        except OSError:
            continue
    return None
