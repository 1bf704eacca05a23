"""A submodule's git folder that an agent swapped for one of its own, moved aside before
agent-loop's own git (outside any sandbox) reads its config.

agent-loop's `git status` and `git add --all` in your checkout run git inside each checked-out
submodule, with that submodule's git folder's config: a filter set there runs as you. A
sandboxed agent cannot write the config of the git folders git made under `.git/modules`, but
it can write a submodule's `.git` (a gitfile, a folder, a symlink) and point it at a folder of
its own. So the git folders each submodule's `.git` resolves to are recorded as a run starts
(`record`), and after every agent run (`guard`) a `.git` that resolves anywhere else is moved
under the plan's `.agent-loop/` folder (kept, never deleted), each move said. Without
--sandbox the agent runs as you anyway: a folder git made under `.git/modules` since
(`git submodule update`) is trusted too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from agentloop.errors import AgentLoopError
from agentloop.files.free_name import free_name
from agentloop.files.shown import typed
from agentloop.ondemand import dataclass as on_first_use
from agentloop.vcs.git.run import Git
from agentloop.vcs.submodule_folders import _holds_gitlink, checkout_unlisted, paths

# Your checkout -> the real paths of the git folders its submodules' `.git` resolved to at the
# run's start, and those under its common git folder's `modules`. Written by `record` alone.
_trusted: dict[Path, frozenset[str]] = {}
# Your checkout -> what git reads as configuration in each git folder its submodules' `.git`
# named at the start: a folder in the working copy (a submodule not absorbed into
# `.git/modules`) is one the agent can write. Written by `record` alone.
_stamps: dict[Path, dict[str, bytes]] = {}
# Your checkout (resolved) -> the repositories inside it that its first `git status` listed
# as one folder each, before any agent ran: yours. Written by `yours` alone.
_yours: dict[Path, frozenset[str]] = {}
# Nested submodules deeper than this are not followed (git itself would go on; no one nests so).
_DEPTH = 8


@on_first_use(frozen=True)
class MovedAside:
    """A submodule's `.git` at `path` (from your checkout) that resolved to `target`, a git
    folder agent-loop did not know, moved to `kept`."""

    path: str
    target: str
    kept: Path
    why_there: str = ""  # why not under the plan's folder: it went beside itself
    how_back: str = "update"  # "move": the folder moved was the submodule's only one


def resolve(dot: Path) -> str | None:
    """The real path of the git folder the `.git` entry `dot` names: itself when a folder (or
    a symlink to one), the `gitdir:` of a gitfile (a relative one from the gitfile's folder,
    as git reads it); None when there is none or it is no gitfile."""
    try:
        if dot.is_dir():   # a folder, or a symlink to one
            return os.path.realpath(dot)
        text = dot.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    named = first[len("gitdir:"):].strip()
    return os.path.realpath(os.path.join(dot.parent, named)) if named else None


def common_dir(root: Path) -> Path | None:
    """The common git folder of the checkout `root` (no process)."""
    found = resolve(root / ".git")
    if found is None:
        return None
    own = Path(found)
    try:
        common = (own / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return own
    return Path(os.path.realpath(own / common))


def made_by_git(modules: Path, depth: int = 0) -> set[str]:
    """The real paths of the git folders under `modules` (nested ones too): where a HEAD is."""
    found: set[str] = set()
    try:
        entries = [e for e in os.scandir(modules) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return found
    for entry in entries:
        folder = Path(entry.path)
        if (folder / "HEAD").is_file():
            found.add(os.path.realpath(folder))
            if depth < _DEPTH:
                found |= made_by_git(folder / "modules", depth + 1)
        elif depth < _DEPTH:
            found |= made_by_git(folder, depth + 1)
    return found


def _gitlinks(top: Path) -> list[str]:
    """The submodule paths of the working copy `top`: those its `.gitmodules` names, those its
    HEAD holds (checkout_unlisted, at `root` only) and the gitlinks of its index."""
    found = list(paths(top))
    git_dir = resolve(top / ".git")
    if git_dir is not None and _holds_gitlink(Path(git_dir)):
        try:
            out = Git(top).out("ls-files", "-s", "-z", codes=(0, 128))
        except AgentLoopError:
            out = ""
        for entry in out.split("\0"):
            head, tab, path = entry.partition("\t")
            if tab and head.startswith("160000 "):
                found.append(path)
    return list(dict.fromkeys(p for p in found if _inside(p)))


def _inside(path: str) -> bool:
    return bool(path) and not path.startswith("/") and ".." not in path.split("/")


def _walk(root: Path, top: Path, trusted: Callable[[Path], bool],
          depth: int = 0) -> list[tuple[str, Path]]:
    """(path from `root`, its `.git`) of every submodule under `top`, nested ones in those
    whose `.git` is `trusted` (git runs in no other to list them); none behind a symlinked
    folder (git goes through none)."""
    found = []
    subs = list(_gitlinks(top)) + (list(checkout_unlisted(root)) if top == root else [])
    real_top = os.path.realpath(top)
    for sub in dict.fromkeys(subs):
        folder = top / sub
        if os.path.realpath(folder) != os.path.normpath(os.path.join(real_top, sub)):
            continue
        dot = folder / ".git"
        if not os.path.lexists(dot):
            continue
        found.append((os.path.relpath(dot.parent, root), dot))
        if depth < _DEPTH and resolve(dot) is not None and trusted(dot):
            found += _walk(root, folder, trusted, depth + 1)
    return found


def _stamp(folder: str) -> bytes:
    """What git reads from the git folder `folder` as its configuration, or where to find it."""
    out = []
    for name in ("config", "config.worktree", "commondir"):
        try:
            out.append(Path(folder, name).read_bytes())
        except OSError:
            out.append(b"\0")
    return b"\0\0".join(out)


def yours(root: Path, folders: frozenset[str]) -> None:
    """Note the repositories inside your checkout `root` that were there before any agent
    ran (the backend's first `git status`): should an agent's `git add` make one a gitlink,
    its git folder is yours, trusted by `record`, never moved aside as the agent's."""
    _yours.setdefault(root.resolve(), folders)


def record(root: Path) -> None:
    """The git folders your checkout's submodules use now, and those git made under its
    common git folder's `modules`, noted once a run: the ones `guard` leaves in place."""
    if root in _trusted:
        return
    common = common_dir(root)
    known = made_by_git(common / "modules") if common is not None else set()
    stamps = {}
    for _path, dot in _walk(root, root, lambda dot: True):
        target = resolve(dot)
        if target is not None:
            known.add(target)
            # The sandbox holds those under the common git folder read-only (its config)
            # and you may change them meanwhile: only one elsewhere is stamped.
            if common is None or not target.startswith(os.path.join(common, "")):
                stamps[target] = _stamp(target)
    for folder in _yours.get(root.resolve(), frozenset()):
        target = resolve(root / folder / ".git")
        if target is not None:  # in the working copy: one the agent could write, stamped
            known.add(target)
            stamps[target] = _stamp(target)
    _trusted[root] = frozenset(known)
    _stamps[root] = stamps


def guard(root: Path, keep: Path, sandboxed: bool) -> list[MovedAside]:
    """Every submodule `.git` of your checkout that resolves to a git folder `record` did not
    note, moved under `keep`/<path>/; `sandboxed` False: one git made under `modules` since is
    trusted too. Nothing (and no process) when the repository has no submodule."""
    if root not in _trusted:
        return []
    trusted = set(_trusted[root])
    if not sandboxed:
        common = common_dir(root)
        if common is not None:
            trusted |= made_by_git(common / "modules")

    stamps = _stamps.get(root, {})

    def known(dot: Path) -> bool:
        # One whose configuration changed since is the agent's now (under --sandbox it can
        # write only one that lies in the working copy).
        target = resolve(dot)
        return target in trusted and (target not in stamps or not sandboxed
                                      or _stamp(target) == stamps[target])

    moved: list[MovedAside] = []
    for path, dot in _walk(root, root, known):
        target = resolve(dot)
        if target is not None and known(dot):
            continue
        if target is None and dot.is_file() and not dot.is_symlink():
            continue  # no gitfile: git takes the folder for no checkout, and reads no config
        kept = free_name(keep / path / ".git")
        how_back = "move" if target is not None and target in stamps else "update"
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            if _same_device(dot, kept.parent):
                os.rename(dot, kept)
            else:
                _move(dot, kept)
        except OSError as exc:  # no room, a busy folder, a permission, a file in the way
            # Beside itself, in its own folder: one rename, where git looks for no `.git`.
            beside = free_name(dot.with_name(".git-moved-by-agent-loop"))
            try:
                os.rename(dot, beside)
            except OSError:
                raise NotMovedAside(moved, MovedAside(path, target or "", kept), exc) from exc
            moved.append(MovedAside(path, target or "", beside, f"{exc.strerror or exc}",
                                    how_back))
            continue
        moved.append(MovedAside(path, target or "", kept, how_back=how_back))
    return moved


class NotMovedAside(AgentLoopError):
    """A `.git` `guard` found and could not move: those it `moved` before, and `failed`."""

    def __init__(self, moved: list[MovedAside], failed: MovedAside, error: OSError) -> None:
        super().__init__(f"could not move {failed.path}/.git: {error}")
        self.moved, self.failed, self.error = moved, failed, error


def _same_device(a: Path, folder: Path) -> bool:
    try:
        return os.lstat(a.parent).st_dev == os.stat(folder).st_dev
    except OSError:
        return False


def _move(a: Path, b: Path) -> None:
    import shutil  # only once an agent swapped a git folder

    shutil.move(str(a), str(b))


def moved_line(moved: list[MovedAside], shown: dict[Path, str], root: Path) -> str:
    """The one line that says which submodule `.git` was moved aside, and where to, with
    the commands that put it back in checkout `root`."""
    parts = [f"{m.path}/.git (naming {m.target or 'a git folder agent-loop did not know'}) "
             f"to {shown[m.kept]}" + (f" (not under agent-loop's folder: {m.why_there})"
                                      if m.why_there else "") for m in moved]
    return ("an agent gave a submodule a git folder agent-loop did not know, whose config "
            "agent-loop's own git would have read: moved " + "; ".join(parts) +
            " (git now takes it for a submodule not checked out: "
            + ", ".join(_way_back(m, shown[m.kept], root) for m in moved) + ")")


def _way_back(moved: MovedAside, shown: str, root: Path) -> str:
    """The command that checks the submodule out again: from the git folder git made for it
    under `.git/modules` when there is one; else the moved folder was its only one (a
    submodule not absorbed, whose config the agent changed), to be looked at and put back.
    Named in full: a person types them from any folder of the checkout."""
    if moved.how_back == "update":
        return (f"`git -C {typed(root)} submodule update --init -- {typed(moved.path)}` checks "
                "it out again")
    return (f"{shown} was its only git folder: read its config (`git config -f "
            f"{typed(moved.kept / 'config')} --list`), then `mv {typed(moved.kept)} "
            f"{typed(root / moved.path / '.git')}` puts it back")


def not_moved_line(failed: MovedAside, error: OSError, shown: str) -> str:
    """The one line that stops a run whose agent's submodule `.git` could not be moved."""
    reason = error.strerror or str(error)
    return (f"an agent gave a submodule a git folder agent-loop did not know, whose config "
            f"agent-loop's own git would read: could not move {failed.path}/.git (naming "
            f"{failed.target or 'a git folder agent-loop did not know'}) to {shown}: {reason}; "
            f"stopped, running no git here: the attempt's files stay as the agent left them. "
            f"Move {failed.path}/.git away yourself before running again (the next run trusts "
            f"the git folder it finds there, rolls those files back and keeps them in a "
            f"commit it names)")
