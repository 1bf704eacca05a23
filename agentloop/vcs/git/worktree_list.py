"""The git worktrees a repository has registered, as the lanes of a parallel run find them
(agentloop.vcs.lanes): listed by `git worktree list`, once a registration a kill cut short inside
`git worktree add` is deleted; whether one is whole; the commit of a lane's branch. Opening a
lane is agentloop.vcs.git.worktrees', taking one down agentloop.vcs.git.teardown's."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.git import refs, registration
from agentloop.vcs.git.run import Git
from agentloop.vcs.lanes import BRANCH_PREFIX, lanes_dir


def _git(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    return Git(root).out(*args, codes=codes).strip()


def git_worktrees(root: Path) -> dict[Path, dict[str, str]]:
    """Registered worktrees by folder: their porcelain fields (branch, locked, prunable...)."""
    try:
        out = _git(root, "worktree", "list", "--porcelain")
    except VcsError as error:
        if not _drop_half_made(root) and not _mended(root):
            said = _said(root)
            if said is None:
                raise
            raise said from error
        out = _git(root, "worktree", "list", "--porcelain")
    found: dict[Path, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in out.splitlines() + [""]:
        if not line:
            if "worktree" in current:
                found[Path(current["worktree"]).resolve()] = current
            current = {}
            continue
        key, _, value = line.partition(" ")
        current[key] = value
    return found


def _drop_half_made(root: Path) -> bool:
    """Whether a lane's registration that a kill cut short inside `git worktree add` was found
    and deleted. git writes a new worktree's files one by one after its lock: killed between
    opening one and writing it, it leaves an empty `commondir` or `gitdir`, which makes every
    `git worktree list` fail ("failed to read .../commondir") and which `git worktree prune`
    never takes (the worktree is locked). Only a registration that is locked by agent-loop or
    git (never one you locked: registration.users_lock), has such a file and is a lane's (its
    name a folder in the lanes folder, made before those files) goes; the lane's own folder is
    then a leftover on disk, cleaned as any other."""
    found = False
    folder = root / ".git" / "worktrees"
    try:
        entries = list(folder.iterdir()) if (root / ".git").is_dir() else []
    except OSError:
        return False
    for own in entries:
        if not (own / "locked").exists() or not (lanes_dir(root) / own.name).is_dir() or \
                not _ours_or_gits(own / "locked"):
            continue
        if any(not _written(own / name) for name in ("commondir", "gitdir")) \
                and not _maker_alive(own / "locked"):
            import shutil  # where used: off every run's way to its first agent

            shutil.rmtree(own)
            found = True
    return found


def _mended(root: Path) -> bool:
    """Whether a lane's registration whose `commondir` was emptied (an agent's write: git then
    fails every `git worktree list`) was written back (registration.mended, of whichever lane's
    folder is in the lanes' folder: no run lock says whose they are)."""
    try:
        names = [p.name for p in lanes_dir(root).iterdir() if p.is_dir()]
    except OSError:
        return False
    return bool(registration.mended(root, names, held=False))


def _said(root: Path) -> VcsError | None:
    """The one line for a half-made registration that is not ours to delete (another program's,
    or a live run's): which folder, and the command that repairs it once nobody makes it."""
    try:
        entries = sorted((root / ".git" / "worktrees").iterdir())
    except OSError:
        return None
    for own in entries:
        for name in ("commondir", "gitdir"):
            if (own / name).is_file() and not _written(own / name):
                # An emptied commondir is written back (git writes `../..` for every worktree),
                # which keeps that worktree; an empty gitdir is a registration never finished.
                repair = f"printf '../..\\n' > {own / name}" if name == "commondir" else \
                    f"rm -rf {own}"
                return VcsError(
                    f"`git worktree list` fails on the worktree registration {own} (its {name} "
                    f"is empty): if no git command is making that worktree now, `{repair}` and "
                    "run again")
    return None


def drop_cut_short(own: Path) -> bool:
    """Whether `own`, a worktree's folder in the repository (`.git/worktrees/<name>`) that a
    kill left before its `gitdir` was written while an agent-loop run registered it (its
    `locked` names that run's pid, gone), was found and deleted. git lists no such worktree and
    `git worktree prune` never takes it (locked): left, it would stay for good, the lane made
    beside it as `<name>1` by `git worktree add` on every later run."""
    if _written(own / "gitdir") or _maker(own / "locked") is None or \
            _maker_alive(own / "locked"):
        return False
    import shutil  # where used: off every run's way to its first agent

    shutil.rmtree(own, ignore_errors=True)
    return not own.exists()


def _maker(locked: Path) -> int | None:
    """The pid a lock names as `agent-loop PID` (as `worktrees._add_fresh` writes it), None
    for another lock (an older lane's, git's own) or none."""
    try:
        return registration.lane_maker(locked.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _ours_or_gits(locked: Path) -> bool:
    """Whether the lock is agent-loop's or git's own (a worktree being made or removed), not
    one you put there: yours is never unregistered. Unreadable is kept, as yours."""
    try:
        reason = locked.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return registration.users_lock({"locked": reason}) is None


def _maker_alive(locked: Path) -> bool:
    """Whether the lock names (_maker) a live process other than this one: another run inside
    its own `worktree add`, whose registration is not half-made but half-way. A lock with no pid
    (an older lane, git's own) is repairable as before."""
    import os

    pid = _maker(locked)
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # alive, someone else's
    return _runs_agent_loop(pid)


def _runs_agent_loop(pid: int) -> bool:
    """Whether live process `pid` may be an agent-loop run: its command line names agent-loop,
    or cannot be read (no /proc: held alive, as before). After a restart (a container's) the
    pid a lock names is some other program's (PID 1, say): that lock's run is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            words = file.read()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # gone since, unless there is no /proc
    except OSError:
        return True
    # The program or the script Python runs (`agent-loop`, `python -m agentloop`), not any
    # word: an editor open on a file under a folder named agent-loop is no run.
    argv = [os.fsdecode(a) for a in words.split(b"\0")[:3]] + ["", "", ""]
    return Path(argv[0]).name == "agent-loop" or Path(argv[1]).name == "agent-loop" or \
        (argv[1] == "-m" and argv[2] == "agentloop")


def _written(file: Path) -> bool:
    try:
        return file.stat().st_size > 0
    except OSError:
        return False


def healthy(path: Path, fields: dict[str, str]) -> bool:
    """Whether the worktree at `path`, registered with `fields`, is whole."""
    # A kill while a lane is made leaves it locked (worktrees._add_fresh; an older version's
    # kill inside `worktree add` left it "initializing"), with a half checkout.
    return path.is_dir() and "prunable" not in fields and "locked" not in fields


def branch_commit(root: Path, branch: str) -> str | None:
    """The commit of branch `branch` (short name), None when there is none: read from the
    repository's files where they tell (the main checkout's .git a folder), else asked."""
    if (root / ".git").is_dir():
        found = refs.branch_tip(root / ".git", "refs/heads/" + branch)
        if found is not None:
            return found or None
    return Git(root).sha(f"refs/heads/{branch}")


def lane_branch_tip(root: Path, name: str) -> str | None:
    """The commit of lane `name`'s branch, None when it has none."""
    return branch_commit(root, BRANCH_PREFIX + name)
