"""git: what agent-loop recorded about a git lane after its last step, which the lane's check
(agentloop.vcs.git.lane_as_recorded) holds against what the repository says now."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from agentloop.ondemand import dataclass
from agentloop.vcs.git.planted import Settings


@dataclass(frozen=True)
class GitLaneRecord:
    """What agent-loop recorded about a git lane after its last step."""

    lane: Path                   # the lane's worktree
    branch: str                  # its branch, refs/heads/...
    head: str | None             # the branch's commit then (None: not known yet)
    main_root: Path              # the user's checkout
    main_ref: str                # the main line's branch, refs/heads/...
    landed: tuple[str, ...] = ()  # main-line commits this lane landed
    checkout: dict[str, tuple[int, int, int] | None] = field(default_factory=dict)
    # (the lane's git dir, the repository's common one): what a step left read from files.
    dirs: tuple[Path, Path] | None = None
    # The main line's commit as the step began, which it must still hold when the step ends;
    # then any it may be found at with nothing to check (a landing that runs beside the step).
    main_at: tuple[str, ...] = ()
    # Your checkout's HEAD log and your branch's (agentloop.vcs.git.reflog), and where each
    # ended as the step began; () when not known.
    reflogs: tuple[tuple[Path, int], ...] = ()
    # Your repository's config and hooks folder as the step began (agentloop.vcs.git.planted);
    # None when not looked at.
    settings: Settings | None = None
    # The lane's index file as the step began, when it held HEAD's tree and nothing else
    # (agentloop.vcs.git.quick.index_seen); None: not known, git is asked what it holds.
    index: tuple[int, ...] | None = None
    # A lane a former run left, opened again (no step yet): its index is asked for files the
    # last step's agent left unmerged, before any agent runs there (one just made holds none).
    reopened: bool = False

    @property
    def short(self) -> str:
        """The lane's branch as a user types it."""
        return self.branch.removeprefix("refs/heads/")

    @property
    def main_short(self) -> str:
        """The main line's branch (yours) as a user types it."""
        return self.main_ref.removeprefix("refs/heads/")
