"""Every status a task's record can hold, through every edit a person makes to its line in the
plan (ticked, unticked, deleted, moved within its group, moved under another heading): the
plan's --status and --dry-run read it without an internal error, and the task ends where a
person would look for it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.app import open_project
from agentloop.cli import command
from agentloop.plan import parse as taskfile
from agentloop.state.project import state_from
from agentloop.state.reconcile import reconcile
from agentloop.state.status import TaskStatus as S

PLAN = "## A\n- [ ] one\n- [{box}] two\n- [ ] three\n\n## B\n- [ ] four\n"
EDITS = {
    "tick": (" ", "## A\n- [ ] one\n- [x] two\n- [ ] three\n\n## B\n- [ ] four\n"),
    "untick": ("x", "## A\n- [ ] one\n- [ ] two\n- [ ] three\n\n## B\n- [ ] four\n"),
    "delete": (" ", "## A\n- [ ] one\n- [ ] three\n\n## B\n- [ ] four\n"),
    "move within": (" ", "## A\n- [ ] one\n- [ ] three\n- [ ] two\n\n## B\n- [ ] four\n"),
    "move under another": (" ", "## A\n- [ ] one\n- [ ] three\n\n## B\n- [ ] four\n- [ ] two\n"),
}
# Where each status ends after each edit (None: the task is gone from the plan's records).
KEPT_OFF_THE_MAIN_LINE = (S.CONFLICTED, S.HELD, S.LANDING)


def expected(status: S, edit: str) -> S | None:
    if edit == "delete":
        return None
    if edit == "tick":
        return {S.COMPLETED: S.COMPLETED, S.UNAPPROVED: S.COMPLETED}.get(status, S.SKIPPED)
    if edit == "untick":
        return S.PENDING if status == S.SKIPPED else status
    if edit == "move under another":
        # Done, skipped or approved by none yet (its change in the history): carried over.
        # Else it starts afresh there (its session, its lane are its old group's).
        return status if status in (S.COMPLETED, S.SKIPPED, S.UNAPPROVED) else S.PENDING
    return status


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize("status", list(S))
def test_every_status_through_every_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         status: S, edit: str) -> None:
    box, after = EDITS[edit]
    if status == S.SKIPPED and edit != "untick":  # skipped: ticked in the plan, before and after
        box, after = "x", after.replace("[ ] two", "[x] two")
    tasks_md = tmp_path / "tasks.md"
    tasks_md.write_text(PLAN.format(box=box))
    project = open_project(tasks_md, tmp_path)
    state = state_from(project, taskfile.load(tasks_md))
    two = state.tasks[1]
    two.status, two.session_id = status, "s1"
    if status not in (S.PENDING, S.SKIPPED):
        two.change_id = two.commit_id = "4e752c4167c7675981ea64c22439fce442074dd4"
    project.store.save(state)
    tasks_md.write_text(after)
    monkeypatch.chdir(tmp_path)

    changed = reconcile(state.tasks, taskfile.load(tasks_md))
    want = expected(status, edit)
    ends = [t.status for t in changed.tasks if t.task == "two"]
    assert ends == ([] if want is None else [want])
    for view in ("--status", "--dry-run"):
        shown = CliRunner().invoke(command, ["tasks.md", view, "--json"])
        assert shown.exit_code == 0, shown.output
        tasks = orjson.loads(shown.stdout)["tasks"]
        # No run lives: --status shows a task left running as interrupted.
        shown_as = S.INTERRUPTED if want == S.RUNNING and view == "--status" else want
        assert [t["status"] for t in tasks if t["summary"] == "two"] == \
            ([] if want is None else [shown_as])
    if edit == "tick" and status in KEPT_OFF_THE_MAIN_LINE:
        assert f"task 2 was {status}: ticked, it is skipped, its kept commit 4e752c4167c7 " \
            "not landed" in changed.summary()
    if edit == "tick" and status == S.UNAPPROVED:
        assert "task 2 was unapproved: ticked, it is completed, its change 4e752c4167c7 " \
            "taken as approved" in changed.summary()
