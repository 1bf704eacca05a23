"""After every step of a lane, trust nothing the agent could touch: what agent-loop recorded (the
lane's branch and commit, what it landed, the operation jj was at) against what the repository
says now. A difference is a value, a Breach: what the agent did outside its task in one line, and
the exact commands to see it and repair it. A breach that stops the group is never landed and
never blamed on the user; the lane and everything in it stay as they are. A git lane's check
and the look at your checkout are here; a jj lane's is agentloop.vcs.jj.lane_check.

What it does not catch (an agent can write anywhere its user can): a write into the user's
checkout is told apart from the user's own edits only by its time, so it is said, never a stop;
a write into another lane's folder shows up as that lane's task's change.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from agentloop.errors import VcsError
from agentloop.files.stamp import stat_or_none
from agentloop.ondemand import dataclass
from agentloop.vcs import own_output, plan_files
from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import refs
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.run import Git
from agentloop.vcs.rewritten import carried, rewritten

# Breach, Kind and GitLaneRecord live in their own modules (agentloop.vcs.git.agent_in_checkout
# makes Breaches from a record too); the lanes and the run core import them from here.


class LaneBreach(VcsError):
    """A lane step found a Breach that stops its group: nothing of that step lands."""

    def __init__(self, breach: Breach, kept: str | None = None) -> None:
        super().__init__(breach.text())
        self.breach = breach
        # Where the finished agent's work, still in the lane's folder, was set aside (a line
        # agentloop.vcs.git.aside.bring_back reads): the next run lands it, its agent unpaid.
        self.kept = kept


def check_git_lane(record: GitLaneRecord) -> Breach | None:
    """The first thing the agent did outside its task, or None when the lane is as recorded.
    The user's checkout is not looked at here (see `written`)."""
    gone = git_lane_gone(record)
    if gone is not None:
        return gone
    if record.dirs is not None and _as_left(record):
        return None
    git, main = Git(record.lane), Git(record.main_root)
    code, out = git.code("symbolic-ref", "-q", "HEAD", codes=(0, 1, 128))
    ref = out.strip() if code == 0 else None
    if ref != record.branch:
        return _checked_out(record, ref)
    tip = main.sha(record.branch)
    if tip is None:
        _refuse_damaged(main, record.branch)
        return _branch_deleted(record)
    if record.head and not main.ancestor(record.head, tip):
        return _branch_rewound(record, tip)
    # Your branch moved (the files said so, or `_as_left` would have): by an agent's git run
    # in your checkout, its reflog says, or back; one the lane checked out is said above.
    # The git lane's checks load with its first check, not with this module (which a jj run,
    # and the run core for LaneBreach, import too).
    from agentloop.vcs.git.agent_in_checkout import agent_moved_main

    found = agent_moved_main(record) or _main_rewound(record, main) or \
        _landed_lost(record, main)
    if found is not None and found.kind in (Kind.MAIN_REWOUND, Kind.AGENT_MOVED_MAIN,
                                            Kind.LANDED_LOST):
        from agentloop.vcs.git.moved_back import index_back  # git lanes only, on this stop

        index_back(record, main)
    return found


def _shorts(record: GitLaneRecord) -> tuple[str, str]:
    """The lane's branch and the main line's, as a user types them."""
    return (record.branch.removeprefix("refs/heads/"),
            record.main_ref.removeprefix("refs/heads/"))


def git_lane_gone(record: GitLaneRecord) -> Breach | None:
    """The lane's worktree gone (its folder, or only its `.git` file: git no longer knows the
    folder as a worktree, and no git command of agent-loop's can run in it), else None. Two
    looks at the folder, no process: asked before any git command in a lane whose agent ran."""
    lane = record.lane
    if lane.is_dir() and (lane / ".git").exists():
        from agentloop.vcs.git.registration import registration_damaged  # git lanes only

        return registration_damaged(record)
    short, main_short = _shorts(record)
    if not lane.is_dir():
        return Breach(Kind.LANE_GONE, f"the lane's worktree {lane} was removed (by its agent, "
                      f"or from outside; its branch {short} keeps what it had committed)",
                      ("git worktree prune", f"git log --oneline {main_short}..{short}"))
    # Only its `.git` file gone (an agent's `rm .git`, a `git worktree prune` after it): the
    # folder and the agent's files in it are where they were.
    return Breach(Kind.LANE_GONE, f"the lane's .git file {lane / '.git'} was removed (by its "
                  f"agent, or from outside), so git no longer knows {lane} as a worktree; its "
                  f"files are where the agent left them, and its branch {short} keeps what it "
                  "had committed",
                  ("git worktree prune", f"git log --oneline {main_short}..{short}"))


def _checked_out(record: GitLaneRecord, ref: str | None) -> Breach:
    """The lane's HEAD on another branch (`ref`; None: detached): your branch is named as
    yours, since a lane that holds it keeps you from switching to it."""
    lane, (short, main_short) = record.lane, _shorts(record)
    where = ("your branch " + main_short if ref == record.main_ref else
             (ref or "a detached HEAD").removeprefix("refs/heads/"))
    commands = [f"git -C {lane} status"]
    if ref == record.main_ref:
        commands.append(f"git log --oneline -5 {main_short}")
    commands.append(f"git -C {lane} switch {short}")
    return Breach(Kind.CHECKED_OUT, f"the agent checked out {where} in its lane {lane}, "
                  f"which works on {short}; nothing of this step is landed", tuple(commands))


def _refuse_damaged(main: Git, branch: str) -> None:
    """The lane's branch is there but names a commit git no longer has: its files deleted from
    the object store, a damaged repository (a `git gc --prune=now`, the agent's in its lane
    too, keeps every commit a branch names): said so, in one line naming `git fsck`, not as a
    branch the agent deleted."""
    code, out = main.code("rev-parse", "--verify", "-q", branch, codes=(0, 1, 128))
    if code == 0 and out.strip():
        from agentloop.vcs.git.pruned import damaged  # only once the branch's commit is gone

        raise damaged([out.strip()])


def _branch_deleted(record: GitLaneRecord) -> Breach:
    lane, short = record.lane, _shorts(record)[0]
    repair = (f"git branch {short} {record.head}" if record.head else
              f"git -C {lane} switch -c {short}")
    return Breach(Kind.BRANCH_DELETED, f"the agent deleted its lane's branch {short} "
                  f"(worktree {lane}); nothing of this step is landed",
                  (f"git -C {lane} status", repair))


def _branch_rewound(record: GitLaneRecord, tip: str) -> Breach:
    """The lane's branch at `tip`, which no longer holds the commit it was at."""
    assert record.head is not None
    short, head = _shorts(record)[0], record.head[:12]
    return Breach(Kind.BRANCH_REWOUND, f"the agent moved its lane's branch {short} back to "
                  f"{tip[:12]}, off the commit {head} it was at; nothing of this step is landed",
                  (f"git log --oneline {tip[:12]}..{head}",
                   f"git -C {record.lane} reset --hard {head}"))


def _landed_lost(record: GitLaneRecord, main: Git) -> Breach | None:
    """A commit this lane landed that the main line no longer holds, in any form."""
    if not record.landed:
        return None
    on_main = set(main.out("rev-list", record.main_ref).split())
    gone = [c for c in record.landed if c not in on_main]
    # One the user amended or rebased is on the main line again: theirs, nothing lost.
    moved = rewritten("git", record.main_root, gone, record.main_ref) if gone else {}
    lost = [c for c in gone if c not in moved and not carried(main, c, record.main_ref)]
    if not lost:
        return None
    from agentloop.vcs.git.moved_back import look_command  # git lanes only

    main_short = _shorts(record)[1]
    return Breach(Kind.LANDED_LOST, f"commit {lost[0][:12]}, which this lane landed on "
                  f"{main_short}, is no longer on it",
                  (look_command(record, lost[0]), f"git cherry-pick {lost[0][:12]}"))


def _main_rewound(record: GitLaneRecord, main: Git) -> Breach | None:
    """Your branch moved back, while the step ran, to a commit of its own past, by whoever did
    it (main_moved_back says why that stops). A branch rewritten (your amend, a `git pull
    --rebase`) is yours as it is now: the landing meets it as it meets any commit of yours."""
    if not record.main_at:
        return None
    old, now = record.main_at[0], main.sha(record.main_ref)
    if now is None or now in record.main_at or not main.ancestor(now, old):
        return None  # gone is said where the landing reads it (GitMainLine.tip)
    from agentloop.vcs.git.moved_back import main_moved_back  # git lanes only

    return main_moved_back(record, old, now)


def _as_left(record: GitLaneRecord) -> bool:
    """Whether the git dir's files say the lane is as the step began: on its branch (which
    exists), at the commit recorded when one is, and the main line at the last commit this
    lane landed (the others below it). No process; False asks git."""
    assert record.dirs is not None
    lane_dir, common = record.dirs
    found = refs.where(lane_dir, common)
    if found is None or found[0] != record.branch or found[1] is None:
        return False  # off its branch, the branch gone, or the files do not tell
    if record.head and found[1] != record.head:
        return False
    tip = refs.branch_tip(common, record.main_ref)
    if record.main_at and tip not in record.main_at:
        return False  # moved: forward (your commit, another lane's landing) or not, git says
    return not record.landed or tip == record.landed[-1]


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
    commands = ((f"git -C {root} diff -- {' '.join(plain)}",) if plain else ()) + (
        (f"git -C {root} diff --cached -- {' '.join(cached)}",
         f"git -C {root} reset -q -- {' '.join(cached)}") if cached else ())
    return Breach(Kind.CHECKOUT_WRITTEN, f"{said} in {root} changed while this lane's agent "
                  "ran (an agent writing outside its lane, or you)"
                  + ("; `git reset` unstages what was staged, the files left as they are"
                     if cached else ""), commands, stops=False)


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
