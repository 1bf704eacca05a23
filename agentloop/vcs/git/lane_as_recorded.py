"""git: whether a lane is as agent-loop recorded it after its last step (GitLaneRecord), trusting
nothing the agent could touch: its worktree there and on its branch, the branch where it was or
ahead, your branch not moved back and still holding what the lane landed. A difference is a
Breach (agentloop.vcs.breach). Your checkout's files are looked at in
agentloop.vcs.git.your_checkout; agentloop.vcs.git.lane_check runs both after each step."""

from __future__ import annotations

from pathlib import Path

from agentloop.files.shown import typed
from agentloop.files.stamp import stamp
from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import refs
from agentloop.vcs.git.in_the_way import in_progress, left_unmerged, restore, unmerged
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.run import Git
from agentloop.vcs.rewritten import carried, rewritten


def check_git_lane(record: GitLaneRecord) -> Breach | None:
    """The first thing the agent did outside its task, or None when the lane is as recorded.
    The user's checkout is not looked at here (agentloop.vcs.git.your_checkout.written)."""
    gone = git_lane_gone(record)
    if gone is not None:
        return gone
    under_way = _under_way(record) or _unmerged(record)
    if under_way is not None:
        return under_way
    if record.dirs is not None and _as_left(record):
        return None
    git, main = Git(record.lane), Git(record.main_root)
    code, out = git.code("symbolic-ref", "-q", "HEAD", codes=(0, 1, 128))
    ref = out.strip() if code == 0 else None
    if ref != record.branch:
        return _checked_out(record, ref, _off_branch(git, main, record))
    tip = main.sha(record.branch)
    if tip is None:
        _refuse_damaged(main, record.branch)
        return _branch_deleted(record)
    if record.head and not main.ancestor(record.head, tip):
        return _branch_rewound(record, tip)
    # Your branch moved (the files said so, or `_as_left` would have): by an agent's git run
    # in your checkout, its reflog says, or back; one the lane checked out is said above.
    # The checks of an agent's git runs in your checkout load with the first that can find one.
    from agentloop.vcs.git.agent_in_checkout import agent_moved_main

    found = agent_moved_main(record) or _main_rewound(record, main) or \
        _landed_lost(record, main)
    if found is not None and found.kind in (Kind.MAIN_REWOUND, Kind.AGENT_MOVED_MAIN,
                                            Kind.LANDED_LOST):
        from agentloop.vcs.git.moved_back import index_back  # git lanes only, on this stop

        index_back(record, main)
    return found


def git_lane_gone(record: GitLaneRecord) -> Breach | None:
    """The lane's worktree gone (its folder, or only its `.git` file: git no longer knows the
    folder as a worktree, and no git command of agent-loop's can run in it), else None. Two
    looks at the folder, no process: asked before any git command in a lane whose agent ran."""
    lane = record.lane
    if lane.is_dir() and (lane / ".git").exists():
        from agentloop.vcs.git.registration import registration_damaged  # git lanes only

        return registration_damaged(record)
    short, main_short = record.short, record.main_short
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


def _under_way(record: GitLaneRecord) -> Breach | None:
    """A merge, rebase, cherry-pick or revert the agent left stopped in its lane (on a
    conflict): its files may hold git's conflict markers, and the lane's next commit would take
    the other side's history (a merge's MERGE_HEAD as a second parent), so nothing of the step
    lands until it is ended. A look at a few files when the step left the lane's git dir."""
    found = in_progress(record.dirs[0] if record.dirs is not None else _git_dir(record.lane))
    if found is None:
        return None
    what, command = found
    lane = record.lane
    return Breach(Kind.UNDER_WAY, f"the agent left {what} stopped in its lane {lane} (its files "
                  "may hold git's conflict markers); nothing of this step is landed",
                  (f"git -C {typed(lane)} status", f"git -C {typed(lane)} {command} --abort"))


def _unmerged(record: GitLaneRecord) -> Breach | None:
    """Files the agent left unmerged in its lane's index with no command under way (a `git
    stash pop` or `apply` that conflicted, a `checkout -m`): they hold git's conflict markers,
    which the step's commit would land as the task's. One stat when the index held HEAD's tree
    as the step began and is the same file still; else one `git ls-files`. Where a lane a
    former run left opens (`reopened`), asked before its step's agent is paid to meet them and
    stop on this line again; a lane just made holds none."""
    if not record.head and not record.reopened:
        return None
    git_dir = record.dirs[0] if record.dirs is not None else _git_dir(record.lane)
    if record.index is not None and stamp(git_dir / "index") == record.index:
        return None
    files = unmerged(Git(record.lane))
    if not files:
        return None
    lane = record.lane
    return Breach(Kind.UNDER_WAY, f"the agent left {left_unmerged(files, f'in its lane {lane}')}"
                  "; nothing of this step is landed",
                  (f"git -C {typed(lane)} diff", restore(lane, files)))


def _git_dir(lane: Path) -> Path:
    """A worktree's git dir, read from its `.git` file (git asked when that file is odd)."""
    try:
        text = (lane / ".git").read_text()
    except (OSError, UnicodeDecodeError):
        text = ""
    if text.startswith("gitdir: "):
        return (lane / text.removeprefix("gitdir: ").strip()).resolve()
    return Path(Git(lane).out("rev-parse", "--absolute-git-dir").strip())


def _checked_out(record: GitLaneRecord, ref: str | None, off: tuple[int, bool] | None
                 ) -> Breach:
    """The lane's HEAD on another branch (`ref`; None: detached): your branch is named as
    yours, since a lane that holds it keeps you from switching to it. `off`: how many commits
    the agent made there that the lane's branch has not, and whether they split off it (made
    on an older commit) rather than on top of it. The repair takes them onto the branch (a
    plain switch back would leave them in the reflog only, and the task's agent paid again
    from scratch): split off, a rebase onto the branch first; then the switch -C, a branch of
    the agent's own or a detached HEAD alike. `off` None: the lane's branch is gone (the
    agent deleted it once off it): a switch -c makes it again where the lane's HEAD is, the
    agent's commits with it (a plain switch to it fails)."""
    lane, short, main_short = record.lane, record.short, record.main_short
    where = ("your branch " + main_short if ref == record.main_ref else
             (ref or "a detached HEAD").removeprefix("refs/heads/"))
    commands = [f"git -C {typed(lane)} status"]
    if ref == record.main_ref:
        commands.append(f"git log --oneline -5 {main_short}")
    kept = ""
    count, split = off if off is not None else (0, False)
    if off is None:
        kept = (f"; its branch {short} is gone, made again at the lane's HEAD by the repair's "
                "switch -c")
        commands.append(f"git -C {typed(lane)} switch -c {short}")
    elif count and ref != record.main_ref:
        there = f"split off {short}" if split else f"on top of {short}"
        how = "the repair's rebase and switch -C" if split else "the repair's switch -C"
        kept = f"; its {count} commit(s) there, {there}, go onto {short} with {how}"
        commands += [f"git -C {typed(lane)} rebase {short}"] if split else []
        commands.append(f"git -C {typed(lane)} switch -C {short}")
    else:
        commands.append(f"git -C {typed(lane)} switch {short}")
    return Breach(Kind.CHECKED_OUT, f"the agent checked out {where} in its lane {lane}, "
                  f"which works on {short}; nothing of this step is landed{kept}",
                  tuple(commands))


def _off_branch(git: Git, main: Git, record: GitLaneRecord) -> tuple[int, bool] | None:
    """How many commits the lane's HEAD has that its branch's tip has not (0: none, HEAD at
    the tip or behind it), and whether they split off the branch (HEAD not on top of it);
    None when the branch is gone and HEAD names a commit."""
    tip, head = main.sha(record.branch), git.sha("HEAD")
    if tip is None and head is not None:
        return None
    if tip is None or head is None or head == tip:
        return 0, False
    count = int(git.out("rev-list", "--count", f"{tip}..{head}").strip() or 0)
    return count, bool(count) and not git.ancestor(tip, head)


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
    lane, short = record.lane, record.short
    repair = (f"git branch {short} {record.head}" if record.head else
              f"git -C {typed(lane)} switch -c {short}")
    return Breach(Kind.BRANCH_DELETED, f"the agent deleted its lane's branch {short} "
                  f"(worktree {lane}); nothing of this step is landed",
                  (f"git -C {typed(lane)} status", repair))


def _branch_rewound(record: GitLaneRecord, tip: str) -> Breach:
    """The lane's branch at `tip`, which no longer holds the commit it was at."""
    assert record.head is not None
    short, head = record.short, record.head[:12]
    return Breach(Kind.BRANCH_REWOUND, f"the agent moved its lane's branch {short} back to "
                  f"{tip[:12]}, off the commit {head} it was at; nothing of this step is landed",
                  (f"git log --oneline {tip[:12]}..{head}",
                   f"git -C {typed(record.lane)} reset --hard {head}"))


def _landed_lost(record: GitLaneRecord, main: Git) -> Breach | None:
    """A commit this lane landed that the main line no longer holds, in any form."""
    if not record.landed:
        return None
    code, out = main.code("rev-list", record.main_ref, "--", codes=(0, 128))
    if code and main.sha(record.main_ref) is None:
        return None  # the branch gone (you deleted it): said where the landing reads it
    on_main = set((out if not code else main.out("rev-list", record.main_ref, "--")).split())
    gone = [c for c in record.landed if c not in on_main]
    # One the user amended or rebased is on the main line again: theirs, nothing lost.
    moved = rewritten("git", record.main_root, gone, record.main_ref) if gone else {}
    lost = [c for c in gone if c not in moved and not carried(main, c, record.main_ref)]
    if not lost:
        return None
    from agentloop.vcs.git.moved_back import look_command  # git lanes only

    main_short = record.main_short
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
