"""No version control: tasks run one after another, nothing is recorded or rolled back."""

from __future__ import annotations

from typing import Iterable

from agentloop.vcs.protocol import Change


class NoneVcs:
    """The `none` backend: every step is a no-op, every change id is empty."""

    name = "none"
    lost_hint = ""

    def prepare(self) -> list[str]:
        """Nothing to prepare; say that failed attempts will not be rolled back."""
        return ["no version control: task changes are not isolated and failed attempts stay"]

    def begin(self, message: str) -> Change:
        """An empty change."""
        return Change(change_id="")

    def finish(self, change: Change, message: str) -> Change:
        """The same empty change: nothing knows which files the task touched."""
        return change

    def abandon(self, change: Change) -> str | None:
        """Nothing can be rolled back."""
        return None

    def bring_back(self, kept: str) -> bool:
        """Nothing is ever kept."""
        return False

    def diff(self, change: Change) -> str:
        """No diff is known."""
        return ""

    def close(self) -> None:
        """Nothing to leave."""

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Nothing is recorded, so nothing can go missing."""
        return set()

    def recovered(self) -> Change | None:
        """Never: without version control there is nothing to recover."""
        return None
