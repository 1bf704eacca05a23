"""git: the stop for your branch moved back, while a step ran, to a commit of its own past (a
`git reset --hard HEAD~1`). Two looks find it: the lane's check (agentloop.vcs.git.
lane_as_recorded), which cannot tell who moved it, and the agent's marked reflog entry
(agentloop.vcs.git.agent_in_checkout), which can; the user reads one breach either way, and one
repair."""

from __future__ import annotations

from agentloop.files.shown import typed
from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import reflog
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.run import Git


def main_moved_back(record: GitLaneRecord, old: str, new: str,
                    said: str | None = None) -> Breach:
    """Your branch moved back from `old` to `new`: a stop for every group, since a landing on
    top would bury the commits it dropped (and a `reset --keep` back to them would then take the
    landing away too). `said`: the agent's reflog entry that did it, known for sure by its mark;
    None when it may have been you."""
    root, short = record.main_root, record.main_short
    if said is None:
        kind = Kind.MAIN_REWOUND
        moved = f"your branch {short} was moved from {old[:12]} back to {new[:12]}"
        who = " (by the agent, or by you), while this lane's agent ran"
    else:
        kind = Kind.AGENT_MOVED_MAIN
        moved = (f"an agent ran git in your checkout {root}, not in its lane, and moved your "
                 f"branch {short} back from {old[:12]} to {new[:12]}")
        who = f" (its reflog entry says `{said}`)"
    return Breach(kind, f"{moved}, dropping what came after it{who}; nothing of this step is "
                  f"landed on it, and {old[:12]} {_kept_where(record, old)[0]}",
                  (f"git -C {typed(root)} log --oneline {new[:12]}..{old[:12]}",
                   f"git -C {typed(root)} reset --keep {old[:12]}"), everywhere=True)


def look_command(record: GitLaneRecord, commit: str) -> str:
    """The command that shows where `commit`, dropped from your branch, still is: the reflog
    that holds it (kept_where), else `git show` of it."""
    return _kept_where(record, commit)[1] or f"git show {commit[:12]}"


def _kept_where(record: GitLaneRecord, old: str) -> tuple[str, str | None]:
    """Where commit `old`, dropped from your branch, is still named, as git says now: the
    branch's reflog (a `reset` keeps it there), else HEAD's (a `git branch -D` deletes the
    branch's reflog with it, and a branch made again under that name starts a new one), else a
    ref that holds it; said only as far as it is true. (the words, the reflog's command or
    None)"""
    git, ref = Git(record.main_root), record.main_ref
    short = ref.removeprefix("refs/heads/")
    for logged, command, whose in ((ref, f"git reflog {short}", ""),
                                   ("HEAD", "git reflog", " (HEAD's)")):
        listed = git.out("log", "-g", "--format=%H", logged, "--", codes=(0, 128)).split()
        if old in listed:
            return f"stays in `{command}`{whose}", command
    holding = git.out("for-each-ref", "--count=1", "--format=%(refname)", "--contains", old,
                      codes=(0, 129)).strip()
    if holding:
        return f"is still on {holding}", None
    return (f"is named by no branch, ref or reflog now: `git show {old[:12]}` finds it until "
            "git's gc prunes it"), None


def moved_from(git: Git, ref: str, began: str | None) -> str | None:
    """The commit your branch `ref` was moved back from by its last move, as its reflog says
    (`git reset --hard HEAD~1`, an agent's `git update-ref`): what the stop's repair, `git reset
    --keep`, takes it back to. None when its last move was no move back, or no reflog says; or
    when the branch is still at `began`, the commit the run found it at (a reset of yours before
    the run is no stop's to repair), or that is not known."""
    old, now = git.sha(f"{ref}@{{1}}"), git.sha(ref)
    if old is None or now is None or began in (None, now) or old == now or \
            not git.ancestor(now, old):
        return None
    return old


def index_back(record: GitLaneRecord, main: Git) -> None:
    """Your checkout, on your branch moved back from the last tip the step knew (the last of
    `record.main_at`) by a ref write from elsewhere (`git update-ref` in a lane: refs are
    shared), whose index and files still hold what was dropped, as staged changes: brought to
    the branch as `git checkout` would, which keeps every edit of yours (a file of yours that
    differs between the two leaves all as it is: the stop says what to do). A reset in your
    checkout already left it there: nothing to do."""
    if not record.main_at:
        return
    old, now = record.main_at[-1], main.sha(record.main_ref)
    if now is None or now == old or not main.ancestor(now, old):
        return
    code, out = main.code("symbolic-ref", "-q", "HEAD", codes=(0, 1, 128))
    if code != 0 or out.strip() != record.main_ref:
        return
    # Moved in your checkout by you (its HEAD's reflog says so, with no agent's mark: a `git
    # reset --soft` keeps the dropped commit's changes staged on purpose): its index and files
    # are as that left them. An agent's reset there staged nothing of yours.
    last = main.out("reflog", "-1", "--format=%H %gs", "HEAD", codes=(0, 128)).strip()
    at, _, said = last.partition(" ")
    if at == now and not reflog.marked(said):
        return
    main.run("read-tree", "-m", "-u", old, now, codes=None)
