"""The change record, the protocol every backend keeps, and the abilities only some have (one
small protocol each): apart from the package's `__init__`, so that what imports `find_root` or
`vcs.history` (`--status` among them) loads neither `dataclasses` nor `typing`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Protocol, runtime_checkable

from agentloop.ondemand import dataclass as on_first_use
from agentloop.ondemand import dataclass_now as dataclass

if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.vcs.landing import IntegrationConflict


@dataclass(frozen=True)
class Change:
    """One task attempt's change. jj: change and commit id; git: the start commit, then the sha."""

    change_id: str          # jj change id; git: the task commit's sha once finished ("" before)
    commit_id: str = ""     # jj commit id; git: same as change_id once finished
    base: str = ""          # what the change started from (git: HEAD sha at begin; jj: parent)
    empty: bool = False     # set by finish: the task changed no files
    files: tuple[str, ...] = ()  # set by finish: the paths the task changed
    # Set by begin: the attempt goes on from the work a killed run's attempt of this task left
    # (its agent had committed), which stays and counts.
    kept: bool = False
    # Set by begin or finish: what the backend found and put right there, for the user (one
    # line, without the task's number); "" when nothing.
    note: str = ""

    @property
    def short(self) -> str:
        """The id as a user types it."""
        return self.change_id[:12]


class NotKept(str):
    """The line abandon returns when no copy of the attempt's files could be made: they are
    left where they are, the line says where and what to do. Never a record's kept work
    (Attempt.work_kept): no next run can bring it back."""

    __slots__ = ()


class Vcs(Protocol):
    """What the runner needs from a version control system."""

    name: str
    lost_hint: str      # how a user gets back a change that went missing

    def prepare(self) -> list[str]:
        """Make the repository ready (init when missing); return notes to show the user."""

    def begin(self, message: str) -> Change:
        """Start a task's change described by `message`."""

    def finish(self, change: Change, message: str) -> Change:
        """Seal the task's change; return it with final ids, `empty` and `files` filled in."""

    def abandon(self, change: Change) -> str | None:
        """Drop the change and every edit the attempt made, leaving all else as it was, once
        they are kept aside; the one line that says where and how to bring them back (a
        NotKept when no copy could be made, the files left as they are)."""

    def bring_back(self, kept: str) -> bool:
        """Put the edits `kept` (a line abandon returned) into the open change, as they were
        when they were kept: True when all of them went in, False (nothing changed) if not."""

    def diff(self, change: Change) -> str:
        """The change's diff as text."""

    def close(self) -> None:
        """Leave the repository so the user's next edits fall into no task's change."""

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Which of these finished tasks' changes are no longer in the history being built on
        (the agent reset the branch, switched it, abandoned a change, restored an operation)."""

    def recovered(self) -> Change | None:
        """A change an earlier run finished but was killed before recording, if prepare found
        one (git); the runner then records it instead of running its task again."""


# What only some backends can do, one protocol an ability: the run core asks
# `isinstance(vcs, Ability)` (runtime_checkable: the members are looked up by name) and mypy
# checks the call that follows; a backend without it takes the other path.


@runtime_checkable
class Rooted(Protocol):
    """A backend that works in a folder (every one but `none`)."""

    @property
    def root(self) -> Path:
        """Its working copy's top folder."""


@runtime_checkable
class ExpectsMessage(Protocol):
    """git: told the message the next task most likely commits with, before it begins."""

    def expect_message(self, message: str) -> None:
        """Note `message`, so the commit can be made ready ahead."""


@runtime_checkable
class CutShort(Protocol):
    """git, your checkout: the commit a finish cut short by a stop had made already."""

    def cut_short(self) -> Change | None:
        """The commit the stopped finish made on your branch, if it made one."""


@on_first_use(frozen=True)  # a killed run's only (agentloop.ondemand)
class KilledAttempt:
    """git: where a killed run's attempt is kept, rolled back by the next run (jj: where a
    stop a kill left unrecorded kept a finished agent's work, KeepsFinished)."""

    line: str  # the line bring_back reads, which names the copy
    # Said already by the prepare that rolled it back (the checkout's among the run's first
    # lines, a lane's as that lane's line): the run's record of the attempt keeps it without
    # saying it again.
    said: bool = False


@runtime_checkable
class KeepsKilledAttempt(Protocol):
    """git: where prepare kept the attempt a killed run left, which it rolled back."""

    def killed_attempt_kept(self, begun_as: str) -> KilledAttempt | None:
        """Where the attempt of the task whose begin was given `begun_as` is kept (once);
        None when there was none, or no copy."""


@runtime_checkable
class KeepsFinished(Protocol):
    """jj: where a stop kept a finished agent's work (LaneBreach.kept), found again by a run
    after one killed before it recorded that stop."""

    def finished_kept(self, change_id: str) -> str | None:
        """The line bring_back reads for the work kept from the task's change `change_id`;
        None when none was kept."""


@runtime_checkable
class RefusesDirty(Protocol):
    """git: a checkout with uncommitted files is refused before a run starts."""

    def uncommitted(self) -> str | None:
        """The refusal prepare would give the checkout as it is now, or None."""


@runtime_checkable
class Discards(Protocol):
    """jj: a change dropped for good, where abandon keeps it for the task's next begin."""

    def discard(self, change: Change) -> str | None:
        """Drop `change`, kept for no begin; a note when its work was set aside."""


@runtime_checkable
class LandsOnABranch(Protocol):
    """git's main line: the branch the tasks land on, which your checkout may have left."""

    ref: str  # refs/heads/...: what the lanes' sweep keeps what did not land against

    def elsewhere(self) -> str | None:
        """The branch (refs/heads/...) when your checkout is not on it now; None when it is."""

    def moved_back_from(self) -> str | None:
        """The commit the branch was moved back from by its last move, with your checkout on
        it; None otherwise."""

    def holds(self, path: str, data: bytes, at: str | None = None) -> bool:
        """Whether the branch (or commit `at`) holds `data`, committed, at `path` (relative to
        the root)."""

    def settle(self) -> None:
        """At the run's end: your checkout, left behind the branch by a lock on its index,
        follows it now, or is said to lag, with the repair."""


@runtime_checkable
class KnowsMade(Protocol):
    """A git lane: the task commit its step made, until the task's record names it."""

    def made(self) -> Change | None:
        """The commit this step made in the lane, if it made one."""


@runtime_checkable
class LandsBeside(Protocol):
    """A git lane: a finish whose landing runs beside what the lane does next."""

    def finish_beside(self, change: Change, message: str) -> tuple[Change, bool]:
        """finish, its landing left running where it can: (the commit, True), else
        (finish's landed change, False)."""

    def landing_beside(self) -> str | None:
        """The commit whose landing runs beside the lane now, if one does."""

    def landed_beside(self) -> bool:
        """Whether a landing runs beside the lane and has landed."""

    def settle_beside(self) -> Change | None:
        """The landing that runs beside, waited for: its commit as it landed, or None."""


@runtime_checkable
class CatchesUp(Protocol):
    """A lane brought up to the main line before each task when the main line moved on since
    the lane's base (your commits, another lane's or another plan's landings)."""

    def behind(self) -> bool:
        """Whether the main line moved on since the lane's base (no process while it has not,
        as far as the lane's last landing knows); a landing left running beside comes first."""

    def catch_up(self) -> bool:
        """The lane on the main line's tip now, the group's session kept; False when it holds
        work of its own not yet landed, and was left as it was."""


@runtime_checkable
class OnMainLine(Protocol):
    """A git lane: its finished tasks' commits are on the main line's checkout and branch."""

    def main_line(self) -> tuple[Path, str]:
        """The main line's checkout and branch."""


@runtime_checkable
class Settles(Protocol):
    """jj: a change an earlier run sealed (or landed), found by its id and trailers."""

    def settled(self, change_id: str, trailers: str) -> Change | None:
        """The task's change as an earlier run left it, landed now where it must be."""


@runtime_checkable
class Keeps(Protocol):
    """jj: a killed run's change kept for the task's next begin, not abandoned."""

    def keeps(self, change_id: str) -> bool:
        """Whether the change stays, for the next begin to take up."""


@runtime_checkable
class SeesCommits(Protocol):
    """jj: the commits its last look at the history found each change at."""

    commits: dict[str, str]


@runtime_checkable
class TakesBack(Protocol):
    """jj lanes: of the finished tasks' changes gone from the main line, those you abandoned
    yourself in your checkout (agentloop.vcs.jj.takenback)."""

    def taken_back(self, lost: set[str]) -> set[str]:
        """The ids among `lost` you took back."""


@runtime_checkable
class LandsLeft(Protocol):
    """A git lane: a commit whose landing was refused or cut short, landed the longer way."""

    def land_left(self, commit: str) -> Change:
        """The commit on the main line now (found there if it landed already)."""


@runtime_checkable
class ResolvesConflicts(Rooted, Protocol):
    """A lane (git or jj) whose task's change does not fit the main line: what the run core
    needs for the group's session to resolve it (agentloop.run.conflicts)."""

    def open_conflict(self, conflict: IntegrationConflict) -> list[str]: ...
    def markers_left(self, files: Iterable[str]) -> list[str]: ...
    def close_conflict(self, conflict: IntegrationConflict) -> Change: ...
    def drop_conflict(self, conflict: IntegrationConflict) -> None: ...
    def kept(self, change_id: str) -> str: ...
    def land_again(self, commit: str) -> Change: ...
    def help_lines(self, where: str) -> str: ...
    def main_commits_touching(self, commit: str, onto: str, files: list[str]) -> list[str]: ...


class Lane(Vcs, Protocol):
    """A lane's backend (a git worktree's or a jj workspace's), as the scheduler uses it."""

    @property
    def lane_commits(self) -> list[str]:
        """What landed, for the lane's records to be dropped."""

    def follow(self) -> None:
        """Go on from the main line's tip, for the next group."""
