"""git: a lane's registration in the repository (`.git/worktrees/<lane>`) that no longer names
the repository, its `commondir` rewritten by its agent or from outside: then no git command runs
in the lane ("not a git repository"). Found from the files, as a Breach (agentloop.vcs.check
asks it with the lane's other standing); the next run's sweep writes it back
(agentloop.vcs.git.teardown)."""

from __future__ import annotations

from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import refs
from agentloop.vcs.git.lane_record import GitLaneRecord


def registration_damaged(record: GitLaneRecord) -> Breach | None:
    """The lane's own git dir no longer naming the repository's; None when it does, or when
    the step left the two dirs unknown (record.dirs). One file read, no process."""
    if record.dirs is None:
        return None
    own, common = record.dirs
    said = refs.commondir_damage(own, common)
    if said is None:
        return None
    short = record.branch.removeprefix("refs/heads/")
    main_short = record.main_ref.removeprefix("refs/heads/")
    held = refs.commondir_said(said)
    return Breach(Kind.LANE_GONE, f"the lane's worktree registration {own} was damaged (by "
                  f"its agent, or from outside): its commondir {held}, not the "
                  f"repository's {common}, so git no longer knows {record.lane} as a worktree; "
                  f"its files are where the agent left them, its branch {short} keeps what it "
                  "had committed, and the next run repairs the registration",
                  (f"git log --oneline {main_short}..{short}",))
