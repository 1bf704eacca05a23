"""The plan is read again between tasks unless its stamp (inode, size, write and change times)
says it is the file read last time (agentloop.run.plan_news.read): an edit that keeps
its size and puts its write time back, and an editor's save by rename, are both seen."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.plans import five_and_task_one_edits, put_back_midrun
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop

PLAN = """\
## One
- [ ] task one
  FAKE: write one.txt one

## Two
- [ ] task two
  FAKE: write two.txt two

## Three
- [ ] task three
  FAKE: write three.txt three
"""

# Run after task 1, in the checkout: each edits the plan as a user or an editor does.
EDITS = {
    # Task 3 ticked: same size; its write time put back as it was.
    "same size, time put back": (
        "python3 -c \"import os,sys; p='tasks.md'; st=os.stat(p); t=open(p).read(); "
        "open(p,'w').write(t.replace('- [ ] task three','- [x] task three')); "
        "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\""),
    # Task 3 deleted, saved the way editors do: a new file renamed over the plan.
    "rename over": (
        "python3 -c \"import os; t=open('tasks.md').read(); "
        "t=t[:t.index('## Three')]; open('tasks.md.new','w').write(t); "
        "os.replace('tasks.md.new','tasks.md')\""),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_between_tasks_is_seen(work: Path, fake_claude: FakeClaude, edit: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN)
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {EDITS[edit]}; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "one.txt").exists() and (work / "two.txt").exists()
    assert not (work / "three.txt").exists(), done.stdout
    assert not any("task three" in p for p in fake_claude.task_prompts())
    assert [t["status"] for t in state_of(work)["tasks"]][:2] == ["completed"] * 2


@pytest.mark.parametrize("left", ["# Todo\n\nNothing left to do.\n", "## One\n"])
def test_every_task_deleted_midrun_starts_none_of_them(work: Path, fake_claude: FakeClaude,
                                                       left: str) -> None:
    """Every task line deleted while task 1 ran (the plan keeps its title or a heading): the
    re-read found "no tasks", took the plan for half saved and ran tasks 2 and 3, each paid
    for, as the plan read before. A file with words but no task left removes them all; a
    blank one (an editor's save half done) still leaves the run as it was."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN)
    hook = (f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then printf \'{left}\' > tasks.md; fi')
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(fake_claude.task_prompts()) == 1, done.stdout
    assert not (work / "two.txt").exists() and not (work / "three.txt").exists()
    assert '"task two" was removed from the plan' in done.stdout, done.stdout
    # The plan holds no task now: task one, done, is said apart by its words, not counted.
    assert ('2 removed from the plan, "task one" (completed, removed from the plan since)'
            in done.stdout), done.stdout



def test_a_task_removed_midrun_leaves_no_gap_in_the_counter(work: Path,
                                                           fake_claude: FakeClaude) -> None:
    """Task 2 removed while task 1 ran: the counter counts the tasks the run does, against
    how many it does now, [1/5] then [2/4], never [3/5] after a number no task took; each line
    names its task as the plan read when it was printed (task three is task 2 once task two is
    gone). The events say the same, their `index` the run's own number."""
    five_and_task_one_edits(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "\n[1/5] task 1: (ungrouped) > task one\n" in out, out
    assert "\n[2/4] task 2: (ungrouped) > task three\n" in out, out
    assert "\n[3/4] task 3: (ungrouped) > task four\n" in out, out
    assert "\n[4/4] task 4: (ungrouped) > task five\n" in out, out
    assert "/5] task 3" not in out and "4 completed, 1 pending, 1 removed from the plan" in out, out
    started = [orjson.loads(line) for line in
               (work / ".agent-loop" / "events.jsonl").read_bytes().splitlines()]
    started = [e for e in started if e.get("type") == "TaskStarted"]
    assert [(e["index"], e["number"], e["position"], e["count"]) for e in started] == \
        [(1, 1, 1, 5), (3, 2, 2, 4), (4, 3, 3, 4), (5, 4, 4, 4)]


def test_status_after_a_midrun_edit_the_run_took_in_says_no_change(
        work: Path, fake_claude: FakeClaude) -> None:
    """The run read the edit before task 3 (task 2 not started, task six for the next run):
    its state records the plan it read, so --status says nothing changed, lists task six to
    do, and only an edit made after the run is said, with its own counts."""
    five_and_task_one_edits(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tasks.md changed while an agent ran" in done.stdout, done.stdout
    # The closing undo line names the last task as --status does (task five is task 4 now),
    # with its change.
    five = git(work, "log", "-1", "--format=%H", "--grep", "task five").strip()[:12]
    assert f"To undo one task, e.g. task 4: git revert {five} " in done.stdout, done.stdout
    assert state_of(work)["task_file_hash"] == \
        "sha256:" + hashlib.sha256((work / "tasks.md").read_bytes()).hexdigest()
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    assert "changed" not in status.stdout, status.stdout
    assert "tasks.md: 5 task(s): 4 completed, 1 pending" in status.stdout, status.stdout
    assert "   5 pending     0 run(s)" in status.stdout and "task six" in status.stdout
    assert "task two" not in status.stdout, status.stdout
    with (work / "tasks.md").open("a") as plan:
        plan.write("- [ ] task seven\n")
    status = agent_loop(work, "--status")
    assert status.stdout.startswith("tasks.md changed since the last run: 1 task added, "
                                    "0 edited, 0 removed; 4 completed tasks kept"), status.stdout
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "agent-loop: 2 of 6 task(s) to run, 4 done already" in again.stdout, again.stdout
    assert (work / "six.txt").exists() and not (work / "two.txt").exists()


def test_an_edit_during_the_last_task_stays_news_for_status(work: Path,
                                                           fake_claude: FakeClaude) -> None:
    """The run records the plan as it last read it (before task 5), not the file at its end:
    a task added while the last task ran is the one change --status says."""
    five_and_task_one_edits(work)
    late = f"  FAKE: bash printf -- '- [ ] task seven\\n' >> {work / 'tasks.md'}\n"
    plan = (work / "tasks.md").read_text()
    (work / "tasks.md").write_text(plan.replace("  FAKE: write five.txt five\n",
                                                "  FAKE: write five.txt five\n" + late))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "- [ ] task seven" in (work / "tasks.md").read_text()
    status = agent_loop(work, "--status")
    assert status.stdout.startswith("tasks.md changed since the last run: 1 task added, "
                                    "0 edited, 0 removed; 4 completed tasks kept"), status.stdout
    assert "tasks.md: 6 task(s): 4 completed, 2 pending" in status.stdout, status.stdout



def test_a_done_task_put_back_midrun_is_recorded_done(work: Path, fake_claude: FakeClaude) -> None:
    """A task done by an earlier run, deleted from the plan, and put back while a run works:
    the run's last save finds its commit in the history and records it done, as the next
    run's start would have, so no agent is paid for it again."""
    put_back_midrun(work, work.parent / "back.py")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "task 2: done already in " in done.stdout, done.stdout
    status = agent_loop(work, "--status")
    assert "changed" not in status.stdout and "4 completed" in status.stdout, status.stdout
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert "0 of 4 task(s) to run" in again.stdout, again.stdout
    assert sum("task two" in p for p in fake_claude.task_prompts()) == 1
