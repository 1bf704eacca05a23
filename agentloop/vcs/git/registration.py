"""git: the lanes' registrations in the repository (`.git/worktrees/<lane>`), read and written
from the files, no process. One that no longer names the repository, its `commondir` rewritten
by its agent or from outside, leaves no git command running in the lane ("not a git
repository"): found as a Breach (agentloop.vcs.git.lane_as_recorded asks it with the lane's
other standing), written back by the next run's sweep (agentloop.vcs.git.teardown) or where
`git worktree list` fails on it (agentloop.vcs.git.worktree_list). And whether a killed run
left anything of its lanes for that sweep at all: asked before the teardown is loaded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import refs
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.lanes import BRANCH_PREFIX, lanes_dir

# Why a lane's worktree is locked (git's own `locked` file, with this reason) while its removal
# deletes its files, which begins once what nobody committed there is kept: a kill inside it
# leaves a lane the next run neither works in nor takes the deletions in for someone's work.
REMOVING = "agent-loop is removing this lane"


def registration_damaged(record: GitLaneRecord) -> Breach | None:
    """The lane's own git dir no longer naming the repository's; None when it does, or when
    the step left the two dirs unknown (record.dirs). One file read, no process."""
    if record.dirs is None:
        return None
    own, common = record.dirs
    said = commondir_damage(own, common)
    if said is None:
        return None
    short, main_short = record.short, record.main_short
    held = commondir_said(said)
    return Breach(Kind.LANE_GONE, f"the lane's worktree registration {own} was damaged (by "
                  f"its agent, or from outside): its commondir {held}, not the "
                  f"repository's {common}, so git no longer knows {record.lane} as a worktree; "
                  f"its files are where the agent left them, its branch {short} keeps what it "
                  "had committed, and the next run repairs the registration",
                  (f"git log --oneline {main_short}..{short}",))


def mended(root: Path, lanes: Iterable[str], held: bool = True) -> list[str]:
    """The registrations of lanes `lanes` whose `commondir` no longer names the repository
    (an agent's write), written back as git writes it (`../..`), so git, and the lane's next
    step, know the lane again; its files, index and branch stay as they were. The notes saying
    so. `held`: the caller's run holds these lanes (their plan's lock), so any damage is
    written back; else (`git worktree list` failed, whoever's lanes they are) only an emptied
    commondir, which fails every `git worktree list` and which git writes the same for every
    worktree, so no one's is changed. A registration being made or removed is left to its own
    repair. A look at the repository's files only: none when its git dir is not a folder of
    the checkout."""
    git_dir = root / ".git"
    if not git_dir.is_dir() or refs.no_linked_worktrees(git_dir):
        return []
    notes = []
    folder = lanes_dir(root)
    for name in sorted(lanes):
        own = _registration_of(git_dir, folder / name)
        if not _written(own / "gitdir") or _half_made(own) or \
                (not held and _written(own / "commondir")):
            continue  # none, half-made (worktree_list drops those), or not ours to write
        said = commondir_mended(own, git_dir)
        if said is not None:
            held_text = commondir_said(said, was=True)
            notes.append(f"repaired the worktree registration of lane {name}: its commondir "
                         f"{held_text}, not the repository (an agent's write, or one from "
                         "outside)")
    return notes


def _registration_of(git_dir: Path, lane: Path) -> Path:
    """The lane's folder in the repository: the one its `.git` file names (git chose
    `name1` where `name` was taken), else the one named as the lane."""
    return own_folder(git_dir, lane) or git_dir / "worktrees" / lane.name


def own_folder(git_dir: Path, lane: Path) -> Path | None:
    """The lane's folder in the repository whose git dir is `git_dir`, as the lane's `.git`
    file names it (git chose `name1` where `name` was taken), when that is one of the
    repository's worktree folders (the file is the agent's to rewrite); else None."""
    own = refs.worktree_git_dir(lane)
    if own is None or own.parent != (git_dir / "worktrees").resolve():
        return None
    return own


def _half_made(own: Path) -> bool:
    """Whether the registration `own` bears agent-loop's (or git's) lock of a worktree being
    made or removed; one you locked is whole."""
    try:
        reason = (own / "locked").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return users_lock({"locked": reason}) is None


def lane_maker(reason: str) -> int | None:
    """The pid a worktree lock's reason names as `agent-loop <pid>` (as `worktrees._add_fresh`
    writes it while a lane is made); None for any other reason (yours, git's own, REMOVING)."""
    words = reason.split()
    if len(words) != 2 or words[0] != "agent-loop" or not words[1].isdigit():
        return None
    return int(words[1])


def users_lock(fields: dict[str, str]) -> str | None:
    """The reason of a lock someone other than agent-loop put on a worktree listed with
    `fields` (`git worktree lock`): agent-loop's own say `agent-loop <pid>` (a lane being made)
    or REMOVING. None when it is not locked, or locked by agent-loop."""
    if "locked" not in fields or "prunable" in fields:
        return None
    reason = fields["locked"].strip()
    # git's own, of a `worktree add` under way (an older version's lanes were so made).
    if lane_maker(reason) is not None or reason in (REMOVING, "initializing"):
        return None
    return reason or "no reason given"


def commondir_damage(own: Path, common: Path) -> str | None:
    """What a linked worktree's own git dir `own` (under `common`/worktrees/) says in its
    `commondir` when that no longer names `common`, the repository's git dir (rewritten, or
    emptied: git then takes the worktree for no repository at all); None when it does, or when
    `own` is not a worktree's folder of `common`. A look only."""
    file = own / "commondir"
    try:
        text = file.read_text(encoding="utf-8", errors="replace").strip()
        # As git writes it, in the folder git made (no symlink in its place or its parent's):
        # `own/../..` is `common` itself, told by two lstats instead of four realpaths, a
        # stat of each folder of each path, at every task's check.
        if text == "../.." and own.parent == common / "worktrees" and own.name != ".." and \
                not own.is_symlink() and not own.parent.is_symlink():
            return None
        if own.resolve().parent != (common / "worktrees").resolve():
            return None
    except OSError:
        return None
    if text and (own / text).resolve() == common.resolve():
        return None
    return text


def commondir_mended(own: Path, common: Path) -> str | None:
    """A damaged `commondir` (commondir_damage: what it said, returned) written back as git
    writes it (`../..`); None, nothing written, when it was whole."""
    text = commondir_damage(own, common)
    if text is None:
        return None
    file = own / "commondir"
    # An agent's symlink there (to a file of yours) is replaced, never written through.
    if file.is_symlink():
        file.unlink()
    file.write_text("../..\n")
    return text


def commondir_said(text: str, was: bool = False) -> str:
    """What a damaged commondir held, in the run's words (commondir_damage's answer)."""
    if not text:
        return "was empty" if was else "is empty"
    return f"{'named' if was else 'names'} {text!r}"


def _written(file: Path) -> bool:
    try:
        return file.stat().st_size > 0
    except OSError:
        return False


def nothing_to_sweep(root: Path, names: set[str]) -> bool:
    """Whether the repository's files say a git sweep has nothing to do (the run after a clean
    one, or the first): no linked worktree, nothing in the lanes' folder, no branch of lanes
    `names`; False when they cannot tell (the git dir not a folder of the checkout, reftable).
    The teardown is then not loaded before the run's first agent starts."""
    git_dir = root / ".git"
    if not git_dir.is_dir() or not refs.no_linked_worktrees(git_dir):
        return False
    try:
        with os.scandir(lanes_dir(root)) as entries:
            if next(entries, None) is not None:
                return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return all(refs.branch_tip(git_dir, f"refs/heads/{BRANCH_PREFIX}{name}") == ""
               for name in names)
