"""app.redone_by_reset: --reset's warning counts every task whose agent work it would throw away,
the finished ones still being put on the main line (landing, held, conflicted) among them."""

from __future__ import annotations

from pathlib import Path

from agentloop.app import open_project, redone_by_reset
from tests.state.test_store import make_state


def test_landing_held_and_conflicted_tasks_count_as_work_redone(tmp_path: Path) -> None:
    tasks_md = tmp_path / "tasks.md"
    tasks_md.write_text("# G\n- [ ] task 1\n")
    state = make_state(6)
    for task, status in zip(state.tasks, ("completed", "unapproved", "landing", "held",
                                          "conflicted", "pending")):
        task.status = status
    open_project(tasks_md, tmp_path).store.save(state)
    assert redone_by_reset(tasks_md, tmp_path) == 5
