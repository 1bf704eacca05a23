"""The plan read again while a run works (agentloop.run.plan_news): when a look at its file is
enough, and when it is read and hashed again. What an edit means for a task about to start is held
by the runs in test_controller.py, test_plan_reread.py and test_plan_edit_*.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.run import plan_news


def test_the_plan_is_hashed_again_until_its_stamp_can_tell_every_edit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between tasks the plan is read and hashed again unless its stamp (inode, size, write
    and change times) is one a later edit is sure to change: a file changed a moment ago can be
    edited again within the same tick of the file system's clock, at the same size."""
    plan = tmp_path / "tasks.md"
    plan.write_text("- one\n")
    seen = plan_news._stamp(plan)
    assert seen is not None
    assert plan_news._settled(seen) is None  # just written: read it again next time
    monkeypatch.setattr(plan_news.time, "time_ns", lambda: seen[3] + plan_news.RACY_NS)
    assert plan_news._settled(seen) == seen  # old enough: an edit moves its change time
    assert plan_news._stamp(tmp_path / "gone.md") is None
