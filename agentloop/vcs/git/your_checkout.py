"""git: your checkout as a lane's step sees it: what `git status` lists there (dirty, Listed),
who each of its files is (stamp), and what changed in it while an agent ran (written). A write
into your checkout is told apart from your own edits only by its time, so it is said, never a
stop."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from agentloop.files.shown import typed
from agentloop.files.stamp import stat_or_none
from agentloop.ondemand import dataclass
from agentloop.vcs import own_output, plan_files
from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git.run import Git


def dirty(git: Git) -> list[str]:
    """The paths `git status` lists in a checkout: edited, staged or untracked. A look only:
    without `--no-optional-locks` git takes the checkout's `index.lock` and writes the whole
    index back whenever it finds an entry to refresh, as it does after every landing (the
    files `merge --ff-only` just wrote are racily clean): a file written per task, and a
    `git add` of the user's at that moment refused for the lock."""
    return listed(git.out(*_STATUS)).paths


def dirty_beside(git: Git) -> Callable[[], Listed]:
    """`dirty(git)` with its git started now, to run beside what the caller does next (the
    lane's add and commit, in another working tree), as a Listed; the function that waits for
    its answer (to be called on every path: it reaps the git)."""
    answer = git.start(*_STATUS)
    return lambda: listed(answer())


_STATUS = ("--no-optional-locks", "status", "--porcelain", "-z", "--no-renames",
           "--untracked-files=all", "--ignored=no")


@dataclass(frozen=True)
class Listed:
    """What `git status` lists in a checkout: the paths, and those of them staged (the index
    differs from HEAD there), whose change `git diff` does not show."""

    paths: list[str]
    staged: frozenset[str] = frozenset()
    unindexed: frozenset[str] = frozenset()  # of them, deleted from the index (`git rm`)
    untracked: frozenset[str] = frozenset()  # of them, not in the index (`??`)


def listed(out: str) -> Listed:
    """`git status --porcelain -z`'s answer, read."""
    entries = [e for e in out.split("\0") if len(e) > 3]
    return Listed(sorted({e[3:] for e in entries}),  # a rename: its old path unprefixed
                  frozenset(e[3:] for e in entries if e[0] not in " ?!"),
                  frozenset(e[3:] for e in entries if e[0] == "D"),
                  frozenset(e[3:] for e in entries if e[0] == "?"))


def written(root: Path, before: dict[str, tuple[int, int, int] | None],
            now: list[str], index: Listed | None = None) -> Breach | None:
    """Files of the user's checkout `root` dirty `now` that were not, or differed, when the
    step began (`before`), and files dirty then that are no longer and were written or
    deleted since (an untracked file removed, an edit put back as committed): said, never a
    stop (the user may be editing too). One you committed meanwhile is where it was: not
    said. `index`: the look that listed `now`, whose staged paths (a `git rm --cached` of the
    agent's) `git diff` does not show: `git diff --cached` does, and `git reset` undoes."""
    if not now and not before:  # the usual case, a clean checkout: nothing to tell apart
        return None
    own = own_output(root)  # `> run.log` in the checkout grows while agents run: the run's
    listed = set(now)
    changed = sorted(p for p in (*now, *(p for p in before if p not in listed))
                     if (p not in before or stamp(root / p) != before[p]) and p not in own)
    if changed:  # a plan is yours to edit while a run works (it is read again between tasks)
        plans = plan_files(root)
        changed = [p for p in changed if p not in plans]
        moved = _plans_moved(root, plans, before, changed)
        changed = [p for p in changed if p not in moved]
    if not changed:
        return None
    # No longer listed: deleted, or written back as committed (your edit in it gone).
    how = {p: gone_as(root, p) for p in changed if p not in listed}
    staged = index.staged if index is not None else frozenset()
    for p in changed:
        if p in staged and p not in how:
            # `git rm --cached`: the file is where it was, git's index no longer has it.
            how[p] = (" (its deletion staged, the file left on disk)"
                      if index is not None and p in index.unindexed and os.path.lexists(root / p)
                      else " (staged)")
    said = ", ".join(p + how.get(p, "") for p in changed[:5])
    shown = [p for p in changed[:5] if p in listed]
    cached = [p for p in shown if p in staged]
    # An untracked file has no diff to show (`git diff` prints nothing for it).
    untracked = index.untracked if index is not None else frozenset()
    plain = [p for p in shown if p not in staged and p not in untracked]
    commands = ((f"git -C {typed(root)} diff -- {_specs(plain)}",) if plain else ()) + (
        (f"git -C {typed(root)} diff --cached -- {_specs(cached)}",
         f"git -C {typed(root)} reset -q -- {_specs(cached)}") if cached else ())
    return Breach(Kind.CHECKOUT_WRITTEN, f"{said} in {root} changed while this lane's agent "
                  "ran (an agent writing outside its lane, or you)"
                  + ("; `git reset` unstages what was staged, the files left as they are"
                     if cached else ""), commands, stops=False)


def _specs(paths: list[str]) -> str:
    """Paths as the pathspecs of a printed git command, typed: a person's shell has no
    GIT_LITERAL_PATHSPECS, so a name git would read as a pattern (`*`, `?`, `[`, a leading
    `:`) is made literal, or `git reset -- s*t.txt` unstages your `st.txt` too."""
    return " ".join(typed(":(literal)" + p if any(c in p for c in "*?[\\") or p.startswith(":")
                          else p) for p in paths)


def _plans_moved(root: Path, plans: set[str], before: dict[str, tuple[int, int, int] | None],
                 changed: list[str]) -> set[str]:
    """Of `changed`, new files that are a plan moved (your `mv tasks.md plan.md` while the run
    works: agentloop.run.plan_kept follows it): the plan is gone from its place, and the file
    is the one it was (an uncommitted plan: the same inode) or holds its committed text."""
    gone = [p for p in plans if not os.path.lexists(root / p)]
    new = [p for p in changed if p not in before and os.path.lexists(root / p)]
    if not gone or not new:
        return set()
    moved = set()
    for plan in gone:
        was = before.get(plan)
        if was is not None:
            moved |= {p for p in new if (stamp(root / p) or (0,))[0] == was[0]}
            continue
        blob = Git(root).code("rev-parse", "-q", "--verify", f"HEAD:{plan}", codes=(0, 1, 128))
        if blob[0] != 0:
            continue
        same = Git(root).out("hash-object", "--", *new).split()
        moved |= {p for p, sha in zip(new, same) if sha == blob[1].strip()}
    return moved


def gone_as(root: Path, path: str) -> str:
    """How a file of the user's that was uncommitted and git lists no longer is said: deleted,
    or written back as committed (the edit in it gone)."""
    return " (deleted)" if not os.path.lexists(root / path) else " (back as committed)"


def stamp(path: Path) -> tuple[int, int, int] | None:
    """Who a file is now (inode, size, change time), None when missing: any write changes it."""
    found = stat_or_none(path, follow_symlinks=False)
    return (found.st_ino, found.st_size, found.st_ctime_ns) if found is not None else None
