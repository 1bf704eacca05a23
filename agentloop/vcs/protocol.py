"""The change record and the protocol every backend keeps: apart from the package's `__init__`,
so that what imports `find_root` or `vcs.history` (`--status` among them) loads neither
`dataclasses` nor `typing`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol


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

    @property
    def short(self) -> str:
        """The id as a user types it."""
        return self.change_id[:12]


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
        they are kept aside; the one line that says where and how to bring them back."""

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
