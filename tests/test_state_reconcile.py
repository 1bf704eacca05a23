"""Living plans: the saved records matched to a changed task file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from agentloop.plan import parse as taskfile
from agentloop.state.reconcile import reconcile
from agentloop.state.schema import TaskState
from tests.conftest import FakeClaude
from tests.test_run_vcs import git_project, state_of


def saved(tmp_path: Path, text: str, done: tuple[int, ...]) -> list[TaskState]:
    (tmp_path / "old.md").write_text(text)
    records = [TaskState.from_task(t) for t in taskfile.load(tmp_path / "old.md").tasks]
    for r in records:
        if r.index in done:
            r.status, r.change_id, r.session_id = "completed", f"change{r.index}", "s1"
    return records


def new(tmp_path: Path, text: str) -> taskfile.TaskFile:
    (tmp_path / "new.md").write_text(text)
    return taskfile.load(tmp_path / "new.md")


def test_added_edited_removed_moved_and_ticked(tmp_path: Path) -> None:
    old = saved(tmp_path, "## G\n- [ ] a\n- [ ] b\n- [ ] c\n- [ ] d\n## H\n- [ ] e\n", (1, 2, 5))
    changed = reconcile(old, new(tmp_path, "## H\n- [ ] e\n## G\n- [ ]   b\n- [ ] a\n"
                                           "- [ ] c, reworded\n- [x] d\n- [ ] f\n"))
    tasks = changed.tasks
    assert [(t.index, t.task, t.status) for t in tasks] == [
        (1, "e", "completed"), (2, "b", "completed"), (3, "a", "completed"),
        (4, "c, reworded", "pending"), (5, "d", "skipped"), (6, "f", "pending")]
    # Kept records keep what they had, their log names included; they moved.
    assert tasks[0].change_id == "change5" and tasks[0].log_name == old[4].log_name
    assert changed.added == (6,) and changed.edited == ((4, ""),) and changed.ticked == (5,)
    assert changed.removed == () and changed.kept_done == 3
    assert changed.summary() == ("1 task added, 1 edited, 0 removed, 1 ticked off; "
                                 "3 completed tasks kept")


def test_an_edited_done_task_names_its_old_change_and_removed_ones_are_returned(
        tmp_path: Path) -> None:
    old = saved(tmp_path, "- one\n- two\n- three\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "- one, better\n- two\n"))
    assert [(t.task, t.status) for t in changed.tasks] == [("one, better", "pending"),
                                                          ("two", "completed")]
    assert changed.edited == ((1, "change1"),)
    assert [r.task for r in changed.removed] == ["three"]
    # The edited task's old record is returned too: its runs cost money (issue 23).
    assert [r.task for r in changed.replaced] == ["one"]
    assert [r.task for r in changed.dropped] == ["three", "one"]
    assert "task 1's earlier change change1 stays in history" in changed.summary()


def test_duplicates_match_in_order_and_new_log_names_never_collide(tmp_path: Path) -> None:
    old = saved(tmp_path, "- same\n- same\n", (1,))
    changed = reconcile(old, new(tmp_path, "- same\n- same\n- same\n"))
    assert [t.status for t in changed.tasks] == ["completed", "pending", "pending"]
    names = [t.log_name for t in changed.tasks]
    assert len(set(names)) == 3


def test_a_task_added_while_a_run_works_is_named_at_its_end_and_run_by_the_next(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "## One\n- [ ] first\n  FAKE: write a.txt A\n"
                       "  FAKE: sleep 1.5\n")
    argv = [sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git", "--no-distill"]
    env = {**os.environ, "NO_COLOR": "1"}
    tool = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    log = work / ".agent-loop" / "logs" / "001-one--first.log"
    for _ in range(200):  # the agent of the first task is at work
        if log.exists():
            break
        time.sleep(0.05)
    with (work / "tasks.md").open("a") as plan:
        plan.write("- [ ] second\n  FAKE: write b.txt B\n")
    out, _ = tool.communicate(timeout=60)
    assert tool.returncode == 0, out
    assert ("tasks.md changed while this run worked (1 task added, 0 edited, 0 removed; 1 "
            "completed task kept); run agent-loop again to run what is new") in out
    again = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"]
    assert "changed while this run worked" not in again.stdout


def test_boxes_the_agent_ticks_are_no_news_at_the_end(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- [ ] tick me off\n")
    said = tmp_path / "directives.json"  # the agent's doing, not in the task's own text
    said.write_text('{"tick me off": ["FAKE: write tasks.md - [x] tick me off (done: see a.txt)"]}')
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill"], cwd=work, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1", "FAKE_CLAUDE_DIRECTIVES": str(said)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text().startswith("- [x] tick me off (done")
    assert "changed while this run worked" not in done.stdout + done.stderr
