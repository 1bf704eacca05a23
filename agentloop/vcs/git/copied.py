"""git: the lanes of a repository copied whole (`cp -a`, `rsync -a`) while a killed run left
them. git writes a linked worktree's two links absolute: the lane's `.git` file names its
registration (`.git/worktrees/<lane>`), whose `gitdir` file names the lane back. A copy keeps
both pointing at the original, so the copy's git took its own lane for the original's ("already
checked out at …") and a `git worktree repair` there turned the original's lane into the copy's
worktree: the original's tasks were then committed into the copy. Each repository's lanes are
linked to its own git dir again, from the files, before git is asked about them; the other
repository's files are only read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from agentloop.files.shown import shown
from agentloop.vcs import STATE_DIR
from agentloop.vcs.git import refs
from agentloop.vcs.lanes import LANES, lanes_dir


def relinked(root: Path, names: Iterable[str]) -> list[str]:
    """The lanes `names` (the caller's run holds them: their plan's lock) whose links name
    another repository's files, linked to this one's again; the notes saying so. A lane's
    registration naming another checkout's lane (a copy's) names this checkout's; a lane whose
    `.git` file names another repository's registration (a copy's `git worktree repair` wrote
    it) names this repository's, when that one names the lane. Nothing when the git dir is not
    a folder of the checkout (a worktree of yours: the registrations are shared)."""
    git_dir = root / ".git"
    if not git_dir.is_dir() or refs.no_linked_worktrees(git_dir):
        return []
    wanted = set(names)
    folder = lanes_dir(root)
    worktrees = (git_dir / "worktrees").resolve()
    try:
        registered = sorted(worktrees.iterdir())
    except OSError:
        return []   # not a folder: git says what is wrong with it
    copied: dict[str, Path] = {}
    for own in registered:
        dot = _named(own / "gitdir")
        if dot is None or dot.name != ".git":
            continue
        lane = dot.parent
        checkout = lane.parent.parent.parent
        if lane.name not in wanted or lane.parent.name != LANES or \
                lane.parent.parent.name != STATE_DIR or _same(checkout, root) or \
                _of_this_repository(checkout, worktrees) or \
                not _came_from(folder / lane.name, own.name, worktrees):
            continue
        _write(own / "gitdir", f"{folder / lane.name / '.git'}\n")
        copied[lane.name] = checkout
    notes = []
    for name in sorted(wanted):
        lane = folder / name
        named = _named(lane / ".git", prefix="gitdir: ")
        if lane.is_symlink() or named is None or _under(named, worktrees):
            continue
        own = worktrees / named.name
        back = _named(own / "gitdir")
        if back is None or not _same(back.parent, lane):
            continue
        _write(lane / ".git", f"gitdir: {own}\n")
        if name not in copied:
            notes.append(f"lane {name}'s .git named another repository's worktree "
                         f"registration ({shown(named)}, as a `git worktree repair` in a copy "
                         "of this repository writes it), and names this repository's again, "
                         "so its tasks land here")
    notes += [_came(name, checkout) for name, checkout in sorted(copied.items())]
    return notes


def _came(name: str, checkout: Path) -> str:
    """The line for lane `name` linked again, which came from the checkout `checkout`: copied
    from it, or moved (it is gone)."""
    there = os.path.lexists(checkout)
    how = "this repository's copy" if there else "this repository, moved"
    left = " (the lane there is left as it is)" if there else ""
    return (f"lane {name} came with {how} from {shown(checkout)}: its worktree links named the "
            f"lane there, and now name this one{left}")


def _named(file: Path, prefix: str = "") -> Path | None:
    """The path a link file names (a `gitdir` file, or a `.git` file's `gitdir: …` line),
    taken from the file's folder when relative, not resolved; None when it names none."""
    try:
        text = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith(prefix) or len(text) == len(prefix) or "\n" in text:
        return None
    return file.parent / text[len(prefix):]


def _same(one: Path, other: Path) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)


def _under(path: Path, worktrees: Path) -> bool:
    return Path(os.path.realpath(path)).parent == worktrees


def _came_from(lane: Path, registered: str, worktrees: Path) -> bool:
    """Whether `lane` here came, copied or moved, with the lane registered as `registered`
    elsewhere: its `.git` file names another repository's registration of that name. A lane
    of a worktree of yours you deleted is registered here too, naming a gone folder as a moved
    repository's does, but no lane here names a registration there."""
    named = _named(lane / ".git", prefix="gitdir: ")
    return named is not None and named.name == registered and not _under(named, worktrees)


def _of_this_repository(checkout: Path, worktrees: Path) -> bool:
    """Whether `checkout` is a worktree of this repository (yours, linked: its lanes are
    registered here too), not another repository."""
    dot = checkout / ".git"
    if dot.is_dir():
        return _same(dot, worktrees.parent)
    named = _named(dot, prefix="gitdir: ")
    return named is not None and _under(named, worktrees)


def _write(file: Path, text: str) -> None:
    """`file` rewritten whole; a symlink in its place (someone's) replaced, never written
    through."""
    if file.is_symlink():
        file.unlink()
    file.write_text(text, encoding="utf-8")
