"""The plan as the run last read it, kept in memory so it can never vanish silently: an agent's
`jj undo` (or `jj op restore`, `git clean`, `git checkout`) can delete a task file jj or git had
not recorded yet. The plan is the user's file and never part of a task's change, so no VCS has
a copy: this one is put back on disk, as the run last read it, and the run says so.

A plan you renamed or moved while the run worked (`git mv tasks.md plan.md`, `mv tasks.md
sub/tasks.md`, edited at once or not) is never put back: a second copy by the old name would be a
second plan, whose next run pays for every task again. The run holds the file it last read open,
so once its name is gone it knows whether the file lives on and where (the path its open file
names now), wherever in the repository it went; where the system cannot say, a file beside it
that is that file (its inode) with the bytes the run read is taken for it. A name where no plan
lives is no rename but a deletion, and the plan is put back: an NFS client's `.nfsXXXX` stand-in
for a removed file it holds open (which vanishes once closed), a trash folder ("Move to Trash":
`.Trash*`), .git, .jj or .agent-loop, or anywhere outside the repository (a plan kept outside
it is followed only beside where it was). The run starts no new
task and says where the plan went; a run of the new name takes this plan's state over
(agentloop.state.project), its finished tasks done. A copy beside it (`cp tasks.md tasks.md.bak`)
is another file: no rename, so the plan is put back. A plan gone with your `git switch` to a
branch that has none, committed as the run read it on the branch the tasks land on, is git's to
bring back: not put back, where git would refuse to switch back over it. So is a plan gone with
your branch moved back (an agent's `git update-ref`, a `git reset --hard HEAD~1`) from a commit
that holds it as the run read it: the stop's `git reset --keep` to that commit brings it back,
and would refuse to, over a copy put back."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from agentloop import proc
from agentloop.files.scratch import scratch
from agentloop.files.shown import typed, typed_path
from agentloop.ondemand import dataclass
from agentloop.run.context import FileId, Run
from agentloop.state import plan_copy
from agentloop.vcs import STATE_DIR, fd_path


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
    return _moved(run, path) or path


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
    renamed). A version not kept before is also written to the plan's state folder (copied),
    which outlives a run killed before it could put the plan back (agentloop.state.plan_copy):
    the run's first read once its first streamed command (a check, or its first agent) has
    started, while the run waits for its first line, not on the way to it (a millisecond of
    every start); until then the plan is in memory, put back by the run should it vanish."""
    if data != run.shared.plan_bytes:
        first = run.shared.plan_bytes is None
        run.shared.plan_bytes = data
        if first:
            proc.after_next_stream(lambda: copied(run))
        else:
            copied(run)
    if file != run.shared.plan_id:
        _hold(run, file)
    run.shared.plan_id = file


# The copy's writes: by the controller, which reads the plan, and by the thread that starts the
# run's first streamed command (a lane's): one at a time, so the newest bytes are written last.
_copying = threading.Lock()


def copied(run: Run) -> None:
    """The plan's bytes as the run last read them written to its copy in the state folder
    (agentloop.state.plan_copy), unless this run wrote them there already. Called as well
    where a run ends, for a run that streamed no command to write them beside (keep)."""
    with _copying:
        data = run.shared.plan_bytes
        if data is None or data == run.shared.plan_copied:
            return
        plan_copy.keep(run.project.store.dir, data)
        run.shared.plan_copied = data


def _hold(run: Run, file: FileId | None) -> None:
    """Hold the plan's file `file` open (its name as the run knows it), the one held before
    closed: an open per file the plan is (an editor's save, a tick), not per read."""
    release(run)
    if file is None:
        return
    try:
        fd = os.open(run.shared.plan_moved or run.project.task_file, os.O_RDONLY)
    except OSError:
        return
    try:
        same = file_id(os.fstat(fd)) == file
    except OSError:
        same = False
    if same:
        run.shared.plan_fd = fd
    else:   # replaced since it was read: the next read holds the file then
        os.close(fd)


def release(run: Run) -> None:
    """The run ends: the plan's file is no longer held open."""
    fd, run.shared.plan_fd = run.shared.plan_fd, None
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


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
    renamed = _moved(run, path)
    if renamed is not None:
        if run.shared.plan_moved is not None:
            return None   # said once
        run.shared.plan_moved = renamed
        new = run.project.shown(renamed)
        text = "the same text" if _holds(renamed, data) else \
            "and edited: its next run reads it as it is"
        # The state is to be saved under the new name (by the caller, through the ledger):
        # the closing lines and `--status` name the file there is.
        return Restored(f"{shown} was renamed {new} while this run worked ({text}), "
                        "so it is not put back: no new task starts; "
                        f"`agent-loop {typed_path(new)}` goes on with this plan, its finished "
                        "tasks done",
                        run.project.store.relative(run.shared.plan_moved), moved=True)
    left = _left_on(run, path, data)
    if left is not None:
        if run.shared.plan_left:
            return None   # said once
        run.shared.plan_left = True
        return Restored(f"{shown} left your checkout with {left} as this run last read it")
    try:
        written = _put_back(path, data)
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


def _put_back(path: Path, data: bytes) -> FileId:
    """`data`, the plan as the run last read it, written at `path` (its folder made again if
    it went too): which file it is now. OSError when it cannot be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Whole or not at all: a plan half written would read as a plan with tasks missing.
    # A plan's mode, not a scratch file's own (its owner's only).
    fd, made = scratch(path.parent, f".{path.name}.", mode=0o666)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        written = file_id(os.fstat(out.fileno()))
    os.replace(made, path)
    return written


def _left_on(run: Run, path: Path, data: bytes) -> str | None:
    """Where git holds the plan, committed as the run last read it, once it left your checkout
    with the branch the tasks land on (the words that say so), else None (asked only once the
    plan is gone). Your checkout left that branch (`git switch old`), which holds it; or your
    branch was moved back (an agent's `git update-ref`, a `git reset --hard HEAD~1`) from a
    commit that holds it, and the stop's repair (`git reset --keep` to that commit) brings it
    back with the rest. Nothing of it is lost, and put back it is an untracked file git refuses
    to write over: your switch back, or that repair, would fail as pasted."""
    from agentloop.errors import AgentLoopError
    from agentloop.vcs.protocol import LandsOnABranch

    main = run.shared.main_line
    if not isinstance(main, LandsOnABranch):
        return None
    try:
        rel = path.relative_to(run.project.root).as_posix()
        ref = main.elsewhere()
        if ref is not None:
            branch = ref.removeprefix("refs/heads/")
            return (f"your switch to another branch; not put back, where it would stand in the "
                    f"way of your switch back: {branch} holds it" if main.holds(rel, data)
                    else None)
        old = main.moved_back_from()
        if old is None or not main.holds(rel, data, at=old):
            return None
    except (AgentLoopError, ValueError):
        return None
    return (f"your branch moved back; not put back, where it would stand in the way of the "
            f"stop's repair: `git -C {typed(run.project.root)} reset --keep {old[:12]}` brings "
            "it back")


def said_back(run: Run, notes: list[str]) -> None:
    """The plan put back after its rename was said: the line that said where it went (and
    that `agent-loop NEW` goes on) is no longer so, and is dropped from `notes`."""
    said = f"{run.project.shown(run.project.task_file)} was renamed "
    notes[:] = [n for n in notes if not (n.startswith(said) and "so it is not put back" in n)]


def _moved(run: Run, path: Path) -> Path | None:
    """Where the plan's file lives now that `path` is gone: the path the file the run holds
    open names, when it still has a name where a plan may live (`_no_rename`); else, where the
    system cannot name an open file's path, a file beside `path` that is the file the run last
    read, with its bytes. None: deleted (`jj undo`, `git clean`, moved to a trash folder), or
    replaced by a copy."""
    fd = run.shared.plan_fd
    if fd is not None:
        try:
            held = os.fstat(fd)
            where = fd_path(fd)
        except OSError:
            where = None
        if where is not None:
            # The system named it: its answer stands, no file beside is taken instead (an NFS
            # stand-in there is the very file, with its bytes). Linux names a removed file
            # "... (deleted)"; its name is checked to be the held file's own.
            try:
                if held.st_nlink > 0 and os.path.isabs(where) and \
                        file_id(os.stat(where)) == file_id(held) and \
                        where != os.fspath(path) and \
                        not _no_rename(run.project.root, path, Path(where)):
                    return Path(where)
            except OSError:
                pass
            return None
    data = run.shared.plan_bytes
    renamed = None if data is None else _renamed(path, data, run.shared.plan_id)
    return None if renamed is None else path.parent / renamed


# The folders of a repository where a file moved is not a plan renamed: the VCS's and the
# run's own, where no one keeps a plan to run.
_NO_PLANS = (".git", ".jj", STATE_DIR)


def _no_rename(root: Path, was: Path, where: Path) -> bool:
    """Whether the plan's file found at `where` (it was at `was`) is no rename but gone as
    the user means it: an NFS client's `.nfsXXXX` stand-in for a removed file it holds open
    (which vanishes once closed), in a trash folder (`.Trash`, `.Trash-<uid>`, where "Move to
    Trash" puts a file on its filesystem), in the VCS's or the run's own folders, or outside
    the repository, unless beside where it was (a plan kept outside the repository, renamed)."""
    if _stand_in(where.name):
        return True
    where, was = where.resolve(), was.resolve()
    if where.parent == was.parent:
        return False
    try:
        inside = where.relative_to(root.resolve()).parts
    except ValueError:
        return True
    return bool(inside) and inside[0] in _NO_PLANS or any(p.startswith(".Trash") for p in inside)


def _stand_in(name: str) -> bool:
    """Whether a file's name is an NFS client's stand-in for a removed file it holds open: the
    file itself, renamed beside where it was until it is closed, then gone (no rename)."""
    return name.startswith(".nfs")


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file at `path` holds `data` (the text the run last read)."""
    try:
        return path.read_bytes() == data
    except OSError:
        return False


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
            if not entry.is_file(follow_symlinks=False) or entry.path == os.fspath(path) or \
                    _stand_in(entry.name):
                continue
            stat = entry.stat(follow_symlinks=False)
            if file_id(stat) == file and stat.st_size == len(data):
                with open(entry.path, "rb") as found:
                    if found.read() == data:
                        return entry.name
        except OSError:
            continue
    return None
