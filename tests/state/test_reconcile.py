"""Living plans: the saved records matched to a changed task file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.plan import numbering, source
from agentloop.plan import parse as taskfile
from agentloop.state.reconcile import reconcile, reworded_lines
from agentloop.state.rewording import alike
from agentloop.state.schema import Attempt, TaskState
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git_project, state_of
from tests.support.runner import agent_loop


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


def test_tasks_only_moved_are_said_so_not_as_nothing_added_edited_removed(
        tmp_path: Path) -> None:
    # A user reorders the plan (or edits the words around its tasks): "tasks.md changed: 0
    # tasks added, 0 edited, 0 removed" read as if the edit had been lost.
    old = saved(tmp_path, "- [ ] a\n- [ ] b\n- [ ] c\n", (1,))
    changed = reconcile(old, new(tmp_path, "Some context.\n\n- [ ] c\n- [ ] a\n- [ ] b\n"))
    assert not changed.news()
    assert changed.note("tasks.md") == ("tasks.md changed: the same tasks (moved, or the words "
                                        "around them edited); 1 completed task kept")



def test_a_skipped_task_no_longer_ticked_is_to_do_again(tmp_path: Path) -> None:
    # Read as ticked by an earlier reader (a Kiro task ticked over an open sub-task), or its
    # box taken off by hand: skipped in the state, to do in the file.
    old = saved(tmp_path, "- [ ] 1. a\n- [x] 2. b\n  - [ ] 2.1 d\n- [x] 3. c\n", (1,))
    old[1].status = "skipped"   # as the reader before this one read it
    assert [t.status for t in old] == ["completed", "skipped", "skipped"]
    changed = reconcile(old, new(tmp_path, "- [ ] 1. a\n- [x] 2. b\n  - [ ] 2.1 d\n"
                                           "- [ ] 3. c\n"))
    assert [t.status for t in changed.tasks] == ["completed", "pending", "pending"]
    assert changed.reopened == (2, 3) and changed.edited == () and changed.added == ()
    assert "2 no longer ticked (to do)" in changed.summary()

def test_ticked_sub_items_and_steps_leave_the_same_task(tmp_path: Path) -> None:
    # An agent (or the tick-boxes setting) ticks the boxes under a task: no edit, the same task.
    old = saved(tmp_path, "- [ ] a\n  - [ ] step\n  1. [~] more\n### Task 2: b\n- [ ] s1\n"
                          "- [ ] s2\n", (1,))
    changed = reconcile(old, new(tmp_path, "- [x] a\n  - [x] step\n  1. [x] more\n"
                                           "### Task 2: b\n- [x] s1\n- [X] s2\n"))
    assert [(t.index, t.status) for t in changed.tasks] == [(1, "completed"), (2, "skipped")]
    assert changed.tasks[0].change_id == "change1"
    assert changed.edited == () and changed.added == () and changed.ticked == (2,)
    # A word changed is still a change of words: the done task says so (and stays done).
    assert reconcile(old, new(tmp_path, "- [ ] a\n  - [ ] step, reworded\n  1. [~] more\n"
                                        "### Task 2: b\n- [ ] s1\n- [ ] s2\n")
                     ).reworded_done == (1,)


def test_an_edited_task_names_its_old_change_and_removed_ones_are_returned(
        tmp_path: Path) -> None:
    old = saved(tmp_path, "- one\n- two\n- three\n", (1, 2))
    old[0].status = "unapproved"  # its change kept for a person: reworded, it runs again
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
    # Written while the agent ran: its write or yours, time cannot tell.
    assert ("tasks.md changed while an agent ran (by it, or you) (1 task added, 0 edited, 0 "
            "removed; 1 completed task kept); run agent-loop again to run what is new") in out
    again = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"]
    assert "tasks.md changed while" not in again.stdout


def test_boxes_the_agent_ticks_are_no_news_at_the_end(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- [ ] tick me off\n")
    said = tmp_path / "directives.json"  # the agent's doing, not in the task's own text
    said.write_text('{"tick me off": ["FAKE: write tasks.md - [x] tick me off (done: see a.txt)"]}')
    # The agent in your checkout, where its tasks.md is your plan (in a lane it is the lane's
    # copy, and your plan is written only by --tick-boxes).
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill", "--workplace", "checkout"], cwd=work,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1", "FAKE_CLAUDE_DIRECTIVES": str(said)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text().startswith("- [x] tick me off (done")
    assert "tasks.md changed while" not in done.stdout + done.stderr


FLAT = "## Editor\n- [ ] 1. Shell\n- [ ] 1.1 Component\n- [ ] 1.2 Store\n- [ ] 2. API\n" \
       "- [ ] 2.1 Client\n"


def spent(records: list[TaskState], done: tuple[int, ...]) -> list[TaskState]:
    for r in records:
        if r.index in done:
            r.attempts, r.cost_usd, r.log = 1, 0.01 * r.index, f"logs/{r.log_name}.log"
            r.history = [Attempt(number=1, started_at="t", cost_usd=r.cost_usd, log=r.log)]
    return records


def test_sub_tasks_folded_into_their_parent_carry_their_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numbering, "under", lambda child, parent: False)  # the earlier reader
    old = spent(saved(tmp_path, FLAT, (1, 2, 3, 4)), (1, 2, 3, 4))
    monkeypatch.undo()
    changed = reconcile(old, new(tmp_path, FLAT + "- [ ] 3. Docs\n"))
    one, two, three = changed.tasks
    # Every part of task 1 was done: it is done, with all their runs, costs and its newest change.
    assert (one.status, one.attempts, one.cost_usd, one.change_id) == (
        "completed", 3, 0.06, "change3")
    assert [a.log for a in one.history] == [r.log for r in old[:3]]
    assert one.log_name == old[0].log_name and one.task.startswith("1. Shell\n- [ ] 1.1")
    # Task 2's part 2.1 never ran: still to do, its paid run counted, a log name of its own.
    assert (two.status, two.attempts, two.cost_usd, two.change_id) == ("pending", 0, 0.04, None)
    assert [a.log for a in two.history] == [old[3].log]
    assert two.log_name not in {r.log_name for r in old}
    assert (three.status, changed.added, changed.removed, changed.edited) == (
        "pending", (3,), (), ())
    assert changed.folded == ((1, 3), (2, 2))
    assert changed.summary() == ("1 task added, 0 edited, 0 removed, 5 records folded into 2 "
                                 "tasks; 1 completed task kept")


def test_a_whole_match_wins_over_a_part() -> None:
    tasks, _ = taskfile.read_text("- [ ] 1.1 B\n- [ ] 1. A\n- [ ] 1.1 B\n")
    old = [TaskState.from_task(t) for t in taskfile.read_text("- [ ] 1.1 B\n- [ ] 1. A\n")[0]]
    old[0].status = old[1].status = "completed"
    changed = reconcile(old, taskfile.TaskFile(Path("t.md"), "sha256:x", tasks))
    assert [(t.task.splitlines()[0], t.status) for t in changed.tasks] == [
        ("1.1 B", "completed"), ("1. A", "pending")]
    assert changed.folded == ((2, 1),)


def test_a_plan_that_folds_runs_nothing_finished_again(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = ("# Implementation Plan\n\n## Editor\n"
            "- [ ] 1. Set up the editor shell\n  FAKE: write shell.txt S\n"
            "- [ ] 1.1 Create the component\n  FAKE: write component.txt C\n"
            "- [ ] 1.2 Wire it to the store\n  FAKE: write store.txt W\n"
            "- [ ] 2. Build the API layer\n  FAKE: write api.txt A\n"
            "- [ ] 2.1 Write the client\n  FAKE: write client.txt K\n")
    work = git_project(tmp_path, plan)
    monkeypatch.chdir(work)

    def cli(*args: str) -> str:
        result = CliRunner().invoke(command, ["tasks.md", *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    # Read as the reader before numbering folded anything: five tasks; four of them run.
    with monkeypatch.context() as earlier:
        earlier.setattr(numbering, "under", lambda child, parent: False)
        earlier.setattr(source, "READER", 1)
        for index in range(1, 5):
            cli("--vcs", "git", "--no-distill", "--task", str(index))
    before = state_of(work)
    assert [t["status"] for t in before["tasks"]] == ["completed"] * 4 + ["pending"]
    paid = sum(t["cost_usd"] for t in before["tasks"])
    calls = len(fake_claude.calls())
    # This reader reads the same file anew, and says so.
    assert orjson.loads(cli("--status", "--json"))["note"] == (
        "tasks.md reads differently with this agent-loop: 0 tasks added, 0 edited, 0 removed, "
        "5 records folded into 2 tasks; 1 completed task kept")

    (work / "tasks.md").write_text(plan + "- [ ] 3. Write the docs\n  FAKE: write docs.txt D\n")
    status = orjson.loads(cli("--status", "--json"))
    assert "5 records folded into 2 tasks" in status["note"]
    assert status["counts"] == {"completed": 1, "pending": 2}
    assert status["cost_usd"] == pytest.approx(paid)
    plan_view = orjson.loads(cli("--dry-run", "--json"))
    assert [(t["summary"], t["runs"]) for t in plan_view["tasks"]] == [
        ("1. Set up the editor shell", False), ("2. Build the API layer", True),
        ("3. Write the docs", True)]
    assert [f["line"] for f in plan_view["folded"]] == [6, 8, 12]

    out = cli("--vcs", "git", "--no-distill")
    assert "5 records folded into 2 tasks" in out
    new = [c["stdin"] for c in fake_claude.calls()[calls:]]
    assert [p for p in new if "1. Set up the editor shell" in p] == []   # never again
    assert len(new) == 2
    after = state_of(work)["tasks"]
    assert [t["status"] for t in after] == ["completed"] * 3
    carried = {a["log"] for t in before["tasks"] for a in t["history"]}
    assert carried <= {a["log"] for t in after for a in t["history"]}
    fresh_cost = sum(a["cost_usd"] for t in after for a in t["history"]
                     if a["log"] not in carried)
    assert sum(t["cost_usd"] for t in after) == pytest.approx(paid + fresh_cost)
    assert after[0]["change_id"] == before["tasks"][2]["change_id"]


def test_a_state_an_earlier_reader_saved_is_no_news_when_it_reads_the_same(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    work = git_project(tmp_path, "- [ ] one\n- [ ] two\n")
    monkeypatch.chdir(work)
    assert CliRunner().invoke(command, ["tasks.md", "--vcs", "git", "--task", "1"]).exit_code == 0
    state = work / ".agent-loop" / "state.json"
    state.write_bytes(state.read_bytes().replace(b'"reader": 2', b'"reader": 1'))
    status = orjson.loads(CliRunner().invoke(command, ["tasks.md", "--status", "--json"]).stdout)
    assert status["note"] is None and status["counts"] == {"completed": 1, "pending": 1}


def test_a_new_record_never_takes_the_log_name_of_an_edited_or_removed_one(
        tmp_path: Path) -> None:
    """Its attempts count from 1 again: under the old record's name they would write over the
    logs its archived record names."""
    old = saved(tmp_path, "## G\n- fix the login bug\n- gone\n", ())
    changed = reconcile(old, new(tmp_path, "## G\n- fix the login bug\n  and the cookie\n"))
    (edited,) = changed.tasks
    assert changed.replaced == (old[0],) and changed.removed == (old[1],)
    assert edited.log_name == "001-g--fix-the-login-bug-2" != old[0].log_name


def test_a_completed_task_reworded_stays_done_and_says_so(tmp_path: Path) -> None:
    old = saved(tmp_path, "## G\n- fix teh typo\n- two\n", (1,))
    changed = reconcile(old, new(tmp_path, "## G\n- fix the typo\n- two, better\n"))
    one, two = changed.tasks
    # Its work is in history: it stays done, with the plan's words and its own record.
    assert (one.status, one.task, one.change_id, one.done_as) == (
        "completed", "fix the typo", "change1", "fix teh typo")
    # Its next attempt (--again) is logged under its new words.
    assert one.log_name == "001-g--fix-the-typo" and changed.replaced == (old[1],)
    # A pending task reworded runs its new words once (issue 30): a new record.
    assert (two.status, two.task) == ("pending", "two, better") and changed.edited == ((2, ""),)
    assert changed.reworded_done == (1,) and changed.news()
    assert "1 edited, 0 removed, 1 reworded after done; 1 completed task kept" in \
        changed.summary()
    assert reworded_lines(changed.tasks, "tasks.md") == [
        "task 1's words changed after it was done: it stays done (not paid for again); "
        "`agent-loop tasks.md --task 1 --again` runs the new words"]
    # Reworded back: done as it reads, nothing to say.
    back = reconcile(changed.tasks, new(tmp_path, "## G\n- fix teh typo\n- two, better\n"))
    assert back.tasks[0].done_as is None and back.tasks[0].status == "completed"


def test_a_typo_fixed_in_a_done_task_is_not_paid_for_again(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "## G\n- wirte a\n  FAKE: write a.txt A\n"
                                 "- write b\n  FAKE: write b.txt B\n")
    argv = [sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git", "--no-distill"]

    def agent_loop(*args: str) -> str:
        done = subprocess.run([*argv, *args], cwd=work, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    agent_loop()
    assert len(fake_claude.calls()) == 2
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace("wirte", "write"))
    line = ("task 1's words changed after it was done: it stays done (not paid for again); "
            "`agent-loop tasks.md --task 1 --again` runs the new words")
    dry = agent_loop("--dry-run")
    assert "0 to run" in dry and line in dry, dry
    assert line in agent_loop("--status")
    ran = agent_loop()
    assert line in ran and "0 of 2 task(s) to run" in ran, ran
    assert len(fake_claude.calls()) == 2  # nothing was paid for again
    assert line in agent_loop("--status")
    agent_loop("--task", "1", "--again")
    assert fake_claude.prompts()[-1].rstrip().endswith("write a\nFAKE: write a.txt A")
    assert line not in agent_loop("--status")


def test_the_again_line_of_a_done_task_reworded_pastes_for_a_plan_with_a_space(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # --status quoted the plan's name twice (`agent-loop ''"'"'my plan.md'"'"'' --task 1
    # --again`): bash then reads a file named with the quotes; the run and --dry-run did not.
    work = git_project(tmp_path, "")
    (work / "tasks.md").unlink()
    plan = work / "my plan.md"
    plan.write_text("- wirte a\n  FAKE: write a.txt A\n")
    assert agent_loop(work, "--vcs", "git", "--no-distill", plan="my plan.md").returncode == 0
    plan.write_text("- write a\n  FAKE: write a.txt A\n")
    for args in (("--status",), ("--dry-run",), ("--vcs", "git", "--no-distill")):
        said = agent_loop(work, *args, plan="my plan.md")
        text = said.stdout + said.stderr
        assert "`agent-loop 'my plan.md' --task 1 --again` runs the new words" in text, text


def test_a_task_deleted_in_one_place_and_added_in_another_is_no_reword(tmp_path: Path) -> None:
    """A hostile trial: "one" deleted and "brand new" added at the end read as task one
    "reworded after done", so the new task stood completed with one's commit and never ran.
    Only a task in the same slot, between the same tasks matched in place, is an edit."""
    old = saved(tmp_path, "## G\n- one\n- two\n- three\n", (1, 2, 3))
    changed = reconcile(old, new(tmp_path, "## G\n- two\n- three\n- brand new\n"))
    assert [(t.task, t.status) for t in changed.tasks] == [
        ("two", "completed"), ("three", "completed"), ("brand new", "pending")]
    assert changed.tasks[2].change_id is None and changed.tasks[2].done_as is None
    assert (changed.added, changed.edited, changed.reworded_done) == ((3,), (), ())
    assert [r.task for r in changed.removed] == ["one"]
    assert changed.summary().startswith("1 task added, 0 edited, 1 removed;")
    # Likewise a task still to do deleted and another added after the next one.
    old = saved(tmp_path, "## G\n- one\n- two\n- three\n- four\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- two\n- four\n- five\n"))
    assert (changed.added, changed.edited, [r.task for r in changed.removed]) == (
        (4,), (), ["three"])
    # In the same slot it is still an edit, in order, even with a moved task beside it.
    old = saved(tmp_path, "## G\n- a\n- b\n- c\n- d\n", (1, 2, 3))
    changed = reconcile(old, new(tmp_path, "## G\n- b\n- a\n- c, better\n- d, too\n"))
    assert (changed.reworded_done, changed.edited, changed.added, changed.removed) == (
        (3,), ((4, ""),), (), ())


def test_a_task_added_at_the_end_after_a_done_one_deleted_runs(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "## G\n- [ ] one\n  FAKE: write one.txt 1\n"
                                 "- [ ] two\n  FAKE: write two.txt 2\n"
                                 "- [ ] three\n  FAKE: write three.txt 3\n")
    first = agent_loop(work, "--vcs", "git", "--no-distill")
    assert first.returncode == 0, first.stdout + first.stderr
    (work / "tasks.md").write_text("## G\n- [ ] two\n  FAKE: write two.txt 2\n"
                                   "- [ ] three\n  FAKE: write three.txt 3\n"
                                   "- [ ] brand new\n  FAKE: write new.txt new\n")
    ran = agent_loop(work, "--vcs", "git", "--no-distill")
    out = ran.stdout + ran.stderr
    assert ran.returncode == 0, out
    assert "1 task added, 0 edited, 1 removed" in out and "reworded after done" not in out, out
    assert (work / "new.txt").read_text().strip() == "new"
    assert len(fake_claude.calls()) == 4
    assert [(t["task"], t["status"]) for t in state_of(work)["tasks"]][-1][1] == "completed"


def test_in_a_slot_a_new_task_pairs_with_the_old_one_most_like_it(tmp_path: Path) -> None:
    """From a review: "two" (done) deleted and a typo fixed in "three" (pending): both old
    tasks stand in the slot after "one", and paired in order "three!" took done "two"'s
    record, stood completed and never ran. It is an edit of "three" (it runs); "two" is gone."""
    old = saved(tmp_path, "## G\n- one\n- two\n- three\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- three!\n"))
    assert [(t.task, t.status) for t in changed.tasks] == [
        ("one", "completed"), ("three!", "pending")]
    assert changed.tasks[1].done_as is None and changed.tasks[1].change_id is None
    assert (changed.added, changed.edited, changed.reworded_done) == ((), ((2, ""),), ())
    assert [r.task for r in changed.removed] == ["two"]
    assert [r.task for r in changed.replaced] == ["three"]
    # More new tasks than old: the old one pairs with the new one most like it, in order.
    old = saved(tmp_path, "## G\n- one\n- write the parser\n- two\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- add a lexer\n"
                                           "- write the parser, faster\n- two\n"))
    assert (changed.added, changed.reworded_done) == ((2,), (3,))
    assert changed.tasks[2].done_as == "write the parser"
    # One done old task and one new in a slot whose words are nothing alike: the new one is
    # not that task reworded (it runs); a pending one pairs whatever the words, as an edit.
    old = saved(tmp_path, "## G\n- one\n- two\n- three\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- something else\n- three\n"))
    assert (changed.added, changed.reworded_done, [r.task for r in changed.removed]) == (
        (2,), (), ["two"])
    old = saved(tmp_path, "## G\n- one\n- two\n- three\n", (1,))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- something else\n- three\n"))
    assert (changed.added, changed.edited, changed.removed) == ((), ((2, ""),), ())


def test_a_task_added_beside_a_done_one_deleted_never_takes_its_record(
        tmp_path: Path) -> None:
    """From a trial: "two" (done) deleted, a typo fixed in "three" and "brand new" added in the
    same place: as many new tasks as old in the slot, paired in order, "three!" took done
    "two"'s record and "brand new" took "three"'s: the fix stood done, never to run. One rule
    for every slot now: the fix is an edit of "three" (it runs), "brand new" is added."""
    old = saved(tmp_path, "## G\n- one\n- two\n- three\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- three!\n- brand new\n"))
    assert [(t.task, t.status) for t in changed.tasks] == [
        ("one", "completed"), ("three!", "pending"), ("brand new", "pending")]
    assert all(t.change_id is None and t.done_as is None for t in changed.tasks[1:])
    assert (changed.added, changed.edited, changed.reworded_done) == ((3,), ((2, ""),), ())
    assert [r.task for r in changed.removed] == ["two"]
    # A done task's typo fixed beside the same edit keeps it done: it is that task reworded.
    old = saved(tmp_path, "## G\n- one\n- fix the parser\n- three\n", (1, 2))
    changed = reconcile(old, new(tmp_path, "## G\n- one\n- fix the parsers\n- three!\n"))
    assert (changed.reworded_done, changed.edited, changed.added) == ((2,), ((3, ""),), ())
    # The same in a slot too big to compare every pair: in order, a done one only when alike.
    many = "".join(f"- step {n}\n" for n in range(25))
    old = saved(tmp_path, f"## G\n- one\n- two\n{many}", (1, 2))
    changed = reconcile(old, new(tmp_path, f"## G\n- one\n- something else entirely\n"
                                           f"{many.replace('- step', '- stage')}- more\n"))
    assert changed.reworded_done == () and changed.tasks[1].status == "pending"


@pytest.mark.parametrize("count", [19, 21, 40])
def test_a_large_reworded_plan_with_a_task_added_on_top_keeps_its_done_tasks(
        tmp_path: Path, count: int) -> None:
    # Every task reworded and one added above them: in a slot too large to compare every new
    # task with every old one (21 and 40 here), the walk in order paired the added task's
    # place first and passed over every done task unlike it: all ran again, paid for.
    old = "".join(f"- [ ] write module{n}.py with its parser\n" for n in range(count))
    records = saved(tmp_path, old, tuple(range(1, count + 1)))
    text = "- [ ] set up the CI config file\n" + "".join(
        f"- [ ] write src/module{n}.py with its parser\n" for n in range(count))
    result = reconcile(records, new(tmp_path, text))
    assert [t.index for t in result.tasks if t.status == "completed"] == \
        list(range(2, count + 2))
    assert result.added == (1,)


def test_a_large_plan_with_its_first_done_tasks_deleted_keeps_the_rest_done(
        tmp_path: Path) -> None:
    old = "".join(f"- [ ] write module{n}.py with its parser\n" for n in range(30))
    records = saved(tmp_path, old, tuple(range(1, 31)))
    text = "".join(f"- [ ] write src/module{n}.py with its parser\n" for n in range(10, 30))
    result = reconcile(records, new(tmp_path, text))
    assert all(t.status == "completed" for t in result.tasks) and len(result.tasks) == 20
    assert [t.task for t in result.tasks][0] == "write src/module10.py with its parser"
    assert len(result.removed) == 10 and not result.added


def _record(tmp_path: Path, text: str) -> TaskState:
    (tmp_path / "one.md").write_text(text)
    return TaskState.from_task(taskfile.load(tmp_path / "one.md").tasks[0])


@pytest.mark.parametrize("was, now", [
    ("Add login page", "Add a login page with OAuth and remember-me"),   # likeness 0.5
    ("Add a login page with OAuth and remember-me", "Add login page"),   # cut down
    ("fix the parser", "fix the parsers"),
    ("two\n  run make check", "something else entirely\n  run make check"),   # lines under it
])
def test_a_task_said_at_length_or_cut_down_reads_as_reworded(tmp_path: Path, was: str,
                                                             now: str) -> None:
    """A one-line task elaborated ("Add login page" -> "Add a login page with OAuth and
    remember-me") was said as "removed and another task put in its place": most of the
    longer text's words are new, so their likeness was under the cut-off."""
    assert alike(_record(tmp_path, f"- [ ] {now}\n"), _record(tmp_path, f"- [ ] {was}\n"))


@pytest.mark.parametrize("was, now", [
    ("two to delete", "three appended"),
    ("Write tests for the parser", "Add caching to the HTTP client"),
    ("Deploy", "Deploy the docs site"),   # one word: every task naming it would be a reword
    ("login page", "page login"),         # the same words, not in order
])
def test_a_task_deleted_with_another_put_in_its_place_is_not_reworded(
        tmp_path: Path, was: str, now: str) -> None:
    assert not alike(_record(tmp_path, f"- [ ] {now}\n"), _record(tmp_path, f"- [ ] {was}\n"))


def test_no_two_records_share_a_log_number_after_an_edit(tmp_path: Path) -> None:
    # Task 3 deleted and task 5 reworded: task 4 (now third) keeps its 004- logs, so the
    # reworded one, now fourth, is not logged under 004- too (`ls .agent-loop/logs` and
    # --status read two tasks as one); an edited task keeps its own number, an added one
    # takes a number no record has.
    old = saved(tmp_path, "## A\n- a1\n- a2\n- a3\n## B\n- b1\n- b2 as it was\n- b3\n", ())
    changed = reconcile(old, new(tmp_path, "## A\n- a1\n- a2\n## B\n- b1\n"
                                           "- b2 as it reads now\n- b3\n- b4\n"))
    numbers = [t.log_name.split("-", 1)[0] for t in changed.tasks]
    assert len(set(numbers)) == len(numbers), [t.log_name for t in changed.tasks]
    assert changed.tasks[3].log_name.startswith("005-b--b2-as-it-reads-now"), changed.tasks[3]
    assert changed.tasks[5].log_name.startswith("007-"), changed.tasks[5]


def test_a_plan_run_before_empty_boxes_and_unclosed_fences_were_read_is_read_anew(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # Reader 4 read `- [] two` as a note and said nothing of a fence never closed; this one
    # reads a task and a warning there. Unchanged since that run, the plan was the state's
    # reading still: task two never ran (--dry-run called it a note) and no warning was said.
    plan = ("- [ ] one\n  FAKE: write a.txt A\n- [] two\n  FAKE: write b.txt B\n\n"
            "```sh\nmake\n\n- [ ] three\n")
    work = git_project(tmp_path, plan)
    monkeypatch.chdir(work)
    done = CliRunner().invoke(command, ["tasks.md", "--vcs", "git", "--no-distill", "--task",
                                        "1"])
    assert done.exit_code == 0, done.output
    # The state as reader 4 saved it: task one done, `[] two` a note, no warning.
    saved = state_of(work)
    assert saved["reader"] == source.READER
    saved.update(reader=4, tasks=saved["tasks"][:1], warnings=[], ignored=[
        {"line": 3, "text": "[] two", "why": "a plain bullet in a checklist: a note, not a task"}])
    (work / ".agent-loop" / "state.json").write_bytes(orjson.dumps(saved))
    shown = CliRunner().invoke(command, ["tasks.md", "--dry-run", "--json"])
    assert shown.exit_code == 0, shown.output
    view = orjson.loads(shown.stdout)
    assert [(t["summary"], t["runs"]) for t in view["tasks"]] == [("one", False), ("two", True)]
    assert any("never closed" in w for w in view["warnings"]), view["warnings"]
