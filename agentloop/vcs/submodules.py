"""An agent's writes inside a git submodule, which no task's commit can hold: found and said.

A lane (a git worktree, a jj workspace) holds each submodule as an empty folder: agent-loop
checks a lane out without its submodules, git ignores whatever lies under a submodule's path,
and jj ignores submodules altogether. Anything in that folder after an agent's run is the
agent's, and would go with the lane: it is moved out, under the plan's `.agent-loop/` folder,
and said. In your checkout a submodule is its own repository: what the agent changed in it
stays there, uncommitted, and a commit the agent made inside it moves it to a commit that only
your copy of it holds; both are said.

Which folders are submodules is agentloop.vcs.submodule_folders (`.gitmodules`, a file read, no
process: a repository without one costs a `stat` a task); only a repository that has submodules
pays a `git status` a task in your checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.errors import AgentLoopError
from agentloop.files.free_name import free_name
from agentloop.files.shown import typed
from agentloop.ondemand import dataclass as on_first_use
from agentloop.vcs.git.run import Git
from agentloop.vcs.submodule_folders import checkout_unlisted, own_dir, paths, unlisted
from agentloop.vcs.submodule_gitdirs import common_dir, made_by_git, resolve

# Your checkout's submodules as the last look saw them: path -> git's "S<c><m><u>" flags.
_seen: dict[Path, dict[str, str]] = {}
# Each lane's submodule folders that were empty when it was first seen (lane_seen).
_empty_from_start: dict[Path, frozenset[str]] = {}
# Each lane's git folders git made for submodules, as it was first seen (lane_seen).
_git_made: dict[Path, frozenset[str]] = {}


@on_first_use(frozen=True)  # an agent's files in a submodule's folder only (agentloop.ondemand)
class Swept:
    """What an agent left in a lane's submodule folder `path`: its `files` (relative to it),
    moved to `kept`."""

    path: str
    files: tuple[str, ...]
    kept: Path


def _empty(folder: Path) -> bool:
    try:
        return folder.is_symlink() or not os.listdir(folder)
    except OSError:  # not there (yet), or not a folder
        return True


def lane_seen(lane: Path) -> None:
    """The lane's submodule folders found empty the first time it is seen (as it was made):
    the only ones a sweep empties. A folder `.gitmodules` names that held files from the
    start is no empty submodule (a stale entry, a vendored copy, an agent's edit of the file):
    its files are tracked ones, never moved.

    What was seen is written in the lane's own VCS folder too (it goes with the lane): a run
    killed while its agent wrote into such a folder leaves the lane for the next run, which
    goes on there and must know the folder held nothing of the repository's, or its agent's
    files would never be moved out and go with the lane."""
    if lane in _empty_from_start:
        return
    own = own_dir(lane)
    subs = paths(lane) + unlisted(lane, own)
    record = (own / RECORD if own is not None else None) if subs else None
    before = _read_record(record)
    found = frozenset(s for s in subs if _empty(lane / s) or s in before)
    _empty_from_start[lane] = found
    _git_made[lane] = frozenset(_modules(lane)) if found else frozenset()
    if record is not None and found != before:
        try:
            record.write_text("".join(f"{s}\n" for s in sorted(found)), encoding="utf-8",
                              errors="surrogateescape")
        except OSError:
            pass  # unwritten: a later run in this lane knows only what it sees


# In the lane's own VCS folder: its submodule folders that were empty when it was first seen.
RECORD = "agent-loop-empty-submodules"


def _read_record(record: Path | None) -> frozenset[str]:
    if record is None:
        return frozenset()
    try:
        text = record.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return frozenset()
    return frozenset(line for line in text.splitlines() if line)


def _modules(lane: Path) -> set[str]:
    """The git folders git made for submodules, under the lane's own git folder's `modules`
    (`git submodule update` in a worktree) and the repository's."""
    own, common = own_dir(lane), common_dir(lane)
    return set().union(*(made_by_git(f / "modules") for f in (own, common) if f is not None))


def _checked_out(lane: Path, dot: Path, sandboxed: bool) -> bool:
    """Whether the submodule `.git` is a checkout git made (`git submodule update`): a gitfile
    naming one of git's own git folders for submodules, one there when the lane was first seen
    under --sandbox (where the agent can make a folder there). Anything else, a symlink, a
    folder, a gitfile naming a folder elsewhere, is the agent's: agent-loop's git in the lane
    would run what its config says."""
    if dot.is_symlink() or not dot.is_file():
        return False
    target = resolve(dot)
    known = _git_made.get(lane, frozenset()) if sandboxed else _modules(lane)
    return target is not None and target in known


def sweep(lane: Path, keep: Path, sandboxed: bool = False) -> list[Swept]:
    """Whatever lies in the lane's submodule folders (held empty: it is the agent's), moved
    under `keep`/<path>, each folder's own; nothing when the repository has no submodule, and
    nothing in a folder that was not empty when the lane was first seen (lane_seen). A folder
    the agent checked the submodule out in with git (`git submodule update`) stays, unless
    its `.git` names a git folder of the agent's own (_checked_out)."""
    moved = []
    # Those of `paths` and of `unlisted` found empty first: `unlisted` is not asked again.
    for sub in sorted(_empty_from_start.get(lane, frozenset())):
        folder = lane / sub
        try:
            entries = sorted(os.listdir(folder)) if not folder.is_symlink() else []
        except OSError:  # not there, or not a folder: nothing written into it
            continue
        if not entries or (".git" in entries and _checked_out(lane, folder / ".git", sandboxed)):
            continue  # empty, or a submodule git checked out (a lane never holds one): not ours
        import shutil  # only once an agent wrote there: a run's start-up never loads it

        target = free_name(keep / sub)
        target.mkdir(parents=True)
        for name in entries:
            shutil.move(str(folder / name), str(target / name))
        moved.append(Swept(sub, _files(target), target))
    return moved


def _files(folder: Path) -> tuple[str, ...]:
    """Every file under `folder`, relative to it, sorted."""
    found = []
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in files:
            found.append(os.path.relpath(os.path.join(top, name), folder))
        # A folder symlink is kept as a link: os.walk does not follow it.
        found.extend(os.path.relpath(os.path.join(top, d), folder) for d in dirs
                     if os.path.islink(os.path.join(top, d)))
    return tuple(sorted(found))


def swept_line(task: int, moved: list[Swept], shown: dict[Path, str], root: Path,
               finished: bool = True) -> str:
    """The one line that says what was moved out of a lane and what to do with it.
    `finished`: False for an attempt that failed or was stopped, whose files are kept to be
    looked at, not to be taken as the task's work."""
    parts = []
    for m in moved:
        names = ", ".join(m.files[:5]) + (f" and {len(m.files) - 5} more"
                                          if len(m.files) > 5 else "")
        parts.append(f"{names} inside submodule {m.path} (kept in {shown[m.kept]}/)")
    first = moved[0]
    if not finished:
        return (f"task {task}'s attempt, which did not finish, wrote {'; '.join(parts)}, which "
                "its lane holds empty: kept for you to look at, as no task's commit holds them")
    return (f"task {task} wrote {'; '.join(parts)}, which its lane holds empty and no task's "
            f"commit can hold: copy them into your submodule and commit them there yourself "
            f"(`cp -R {typed(first.kept)}/. {typed(root / first.path)}/`), or run tasks "
            "that edit a "
            "submodule with --workplace checkout, where the agent works in your submodule")


def look(root: Path) -> dict[str, str] | None:
    """Your checkout's submodules that differ from what its index records: path -> git's
    "S<c><m><u>" flags (commit moved, tracked files changed, new files); None when the
    repository has no submodule (and no process ran)."""
    if not (root / ".git").exists():
        return None
    subs = paths(root) + checkout_unlisted(root)
    if not subs:
        return None
    # git's own door: the run core, which asks, knows no VCS backend; this module does.
    try:
        out = Git(root).run("status", "--porcelain=v2", "-z", "--ignore-submodules=none",
                            "--untracked-files=normal", "--", *subs,
                            codes=None).stdout
    except AgentLoopError:  # git gone, or stuck: nothing to say, the task's commit says more
        return {}
    found = {}
    for record in out.split("\0"):
        fields = record.split(" ", 8)
        if len(fields) == 9 and fields[0] == "1" and fields[2].startswith("S"):
            found[fields[8]] = fields[2]
    return found


def before_task(root: Path) -> None:
    """Your checkout's submodules as a task begins, looked at once a run: every later task
    starts from the look after the one before."""
    if root not in _seen:
        now = look(root)
        if now is not None:
            _seen[root] = now


def after_task(root: Path, task: int, vcs: str) -> str | None:
    """The line that says which submodule of your checkout the task changed, and what its
    commit holds of that; None when it changed none (or there is none)."""
    before = _seen.get(root)
    if before is None:
        return None
    now = look(root) or {}
    moved, dirty = [], []
    for sub, flags in now.items():
        was = before.get(sub, "S...")
        if flags[1] == "C" and was[1] != "C":
            moved.append(sub)
        if (flags[2] == "M" and was[2] != "M") or (flags[3] == "U" and was[3] != "U"):
            dirty.append(sub)
    # The task's commit records a moved submodule's commit (git): the next task starts from
    # there, not from a move it would take for its own.
    _seen[root] = {s: (f"S.{f[2:]}" if s in moved and vcs == "git" else f)
                   for s, f in now.items()}
    said = []
    if moved:
        names = ", ".join(moved)
        said.append(
            f"task {task} made a commit inside submodule {names}: the task's commit records "
            f"its new commit, which only your copy of {names} holds; push it from there "
            "before you push this branch" if vcs == "git" else
            f"task {task} made a commit inside submodule {names}: jj records no submodule, "
            "so the task's change does not hold that move; only your copy of "
            f"{names} does")
    if dirty:
        names = ", ".join(dirty)
        said.append(f"task {task} left uncommitted changes inside submodule {names}, which "
                    f"no task's commit holds: commit them inside {names} yourself (`git -C "
                    f"{dirty[0]} status` shows them)")
    return "; ".join(said) or None
