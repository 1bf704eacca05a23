"""git: what a lane knows between its steps (agentloop.vcs.git.lane): what it landed, where the
main line stood as it last knew, the step's commit, its look at your checkout, the landing that
runs beside it. The lane, its check (lane_check) and its landing beside (landing_beside) read
these fields; only the functions here replace them."""

from __future__ import annotations

from typing import Protocol

from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.protocol import Change

Stamps = dict[str, "tuple[int, int, int] | None"]


class Pending(Protocol):
    """A landing that runs beside the lane (agentloop.vcs.git.landing_beside.Beside), as the
    state knows it: no import of that module, which writes the state through this one."""

    done: Change

    def landed(self) -> bool:
        """Whether it has ended, landed (asked without waiting)."""

    def wait(self) -> bool:
        """Wait for it; whether it landed."""


class LaneState:
    """A git lane's state between its steps, and the one writer of it."""

    __slots__ = ("lane_commits", "landed", "record", "seen", "sound", "beside", "looked", "made",
                 "finishing", "stash", "synced")

    def __init__(self, seen: Stamps | None) -> None:
        self.lane_commits: list[str] = []   # what landed, for the lane's records to be dropped
        self.landed: list[str] = []         # the main line's copies of them
        # What the lane looked like when its step began (agentloop.vcs.git.lane_as_recorded).
        self.record: GitLaneRecord | None = None
        # The user's uncommitted paths as the last step's check saw them: the next step's
        # record, without a second look at the checkout.
        # (The first step's: what the main line found as the run began, if no lane took it.)
        self.seen: Stamps | None = seen
        # The main line's commit at which every finished task's commit was last known to be
        # on it (agentloop.vcs.git.backend.GitVcs.missing does the same in a checkout).
        self.sound: str | None = None
        # The last step's landing, while it runs beside the next task's agent (finish_beside).
        self.beside: Pending | None = None
        # The user's uncommitted paths as the last step's check looked at them beside its
        # commit; None when it did not look (the landing then never runs beside).
        self.looked: list[str] | None = None
        # The task commit the step made here (made), from its commit to the next begin.
        self.made: Change | None = None
        self.finishing = False  # inside the step's commit (LaneGit._commit), until it returns
        # The stash list's newest entry as the step began (agentloop.vcs.git.stash).
        self.stash: str | None = None
        # The main line's commit whose tree the lane's HEAD holds, as far as the lane knows
        # without asking git (LaneGit.behind): its landings and catch-ups move it; None: not
        # known.
        self.synced: str | None = None

    # -- a step's beginning and its commit --------------------------------------------------

    def begin(self, stash: str | None) -> Stamps | None:
        """A step begins, the stash list's newest entry `stash`: nothing made yet; the
        paths the last check saw, taken (once)."""
        seen, self.seen = self.seen, None
        self.made, self.finishing = None, False
        self.stash = stash
        return seen

    def began(self, record: GitLaneRecord) -> None:
        """What the lane looked like as the step began."""
        self.record = record

    def committing(self) -> None:
        """The step's commit has begun."""
        self.finishing = True

    def committed(self, made: Change) -> None:
        """The step's commit, made."""
        self.made, self.finishing = made, False

    # -- the step's check -----------------------------------------------------------------

    def take_stash(self) -> str | None:
        """The stash list's newest entry as the step began, taken (once)."""
        before, self.stash = self.stash, None
        return before

    def not_looked(self) -> None:
        """The check has not looked at your checkout (yet)."""
        self.looked = None

    def looked_at(self, now: list[str], seen: Stamps) -> None:
        """The check's look at your checkout: the paths uncommitted now, and their stamps for
        the next step's record."""
        self.seen, self.looked = seen, now

    # -- landings ---------------------------------------------------------------------------

    def landed_on(self, base: str | None, sha: str) -> None:
        """A lane commit on `base` landed as itself (`sha`): a main line known whole stays whole,
        and a lane that held `base` holds the tip."""
        if self.sound is not None and self.sound == base:
            self.sound = sha
        if self.synced is not None and self.synced == base:
            self.synced = sha

    def copied(self, lane_commit: str) -> None:
        """`lane_commit` landed as a copy, whose landed record goes once its task is saved."""
        self.lane_commits.append(lane_commit)

    def landed_commit(self, sha: str) -> None:
        """`sha` is on the main line (the lane commit itself, or its copy)."""
        self.landed.append(sha)

    def beside_started(self, beside: Pending) -> None:
        """A landing runs beside the lane now; counted as landed from here on, as the next
        step's record must say (beside_ended takes it back if it does not land)."""
        self.beside = beside
        self.landed.append(beside.done.change_id)

    def beside_ended(self, landed: bool) -> None:
        """The landing beside waited for: landed, or taken back."""
        done = self.beside.done if self.beside is not None else None
        self.beside = None
        if done is None:
            return
        if not landed:
            self.landed.remove(done.change_id)
            return
        self.landed_on(done.base, done.change_id)

    # -- the main line ----------------------------------------------------------------------

    def whole_at(self, tip: str | None) -> None:
        """Every finished task's commit is on the main line at `tip`."""
        self.sound = tip

    def synced_to(self, tip: str | None) -> None:
        """The lane's HEAD holds the main line's `tip`."""
        self.synced = tip

    def group_ended(self) -> None:
        """The group's tasks all landed and saved: what the next one lands is checked afresh."""
        self.lane_commits.clear()  # their landed records went as their group ended
        self.landed.clear()
