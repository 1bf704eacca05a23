"""The user rewrites or reverts a task's commit in their checkout while the run goes on (the
history check after each task, agentloop.run.history_check.check_history, now follows the finished
tasks' ids task by task): a revert keeps every record and the run going; a rebase that moves a
task's commit is followed by its record; neither stops the run nor loses a task."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, state_of
from tests.support.runner import agent_loop

PLAN = """\
## One
- task one
  FAKE: write one.txt one

## Two
- task two
  FAKE: write two.txt two
- task three
  FAKE: write three.txt three
"""

AFTER_TASK_1 = {
    # Undo task 1 by hand, the way its closing line says.
    "revert": "git revert --no-edit HEAD >/dev/null",
    # Slip a commit of yours in under task 1: its commit is rewritten, its trailers kept.
    "rebase": "git checkout -qb base HEAD~1 && echo u > u.txt && git add u.txt && "
              "git commit -qm base && git checkout -q main && git rebase -q base && "
              "git branch -qD base",
}


@pytest.mark.parametrize("what", sorted(AFTER_TASK_1))
@pytest.mark.parametrize("workplace", ["lane", "checkout"])
def test_your_revert_or_rebase_of_a_task_mid_run(work: Path, fake_claude: FakeClaude,
                                                 what: str, workplace: str) -> None:
    _started(work, PLAN)
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {AFTER_TASK_1[what]}; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace,
                      "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3
    history = git(work, "rev-list", "HEAD").split()
    assert all(t["change_id"] in history for t in tasks), done.stdout
    subjects = [git(work, "log", "-1", "--format=%s", t["change_id"]).strip() for t in tasks]
    assert [s.split(" / ")[-1] for s in subjects] == ["task one", "task two", "task three"]
    assert (work / "two.txt").exists() and (work / "three.txt").exists()
    assert (work / "one.txt").exists() == (what == "rebase")
    if what == "rebase":
        assert (work / "u.txt").exists()
        assert "task 1's change moved" in done.stdout + done.stderr


ONE_GROUP = """\
## All
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
- task three
  FAKE: write three.txt three
"""

IN_GROUP = {
    # Touch up the agent's last commit, its message and trailers kept.
    "amend": "echo fix >> one.txt && git commit -qa --amend --no-edit",
    "rebase": AFTER_TASK_1["rebase"],
}


@pytest.mark.parametrize("what", sorted(IN_GROUP))
def test_your_rewrite_of_a_task_the_lane_landed_in_its_group(work: Path, fake_claude: FakeClaude,
                                                            what: str) -> None:
    """The lane's own check after the next task sees the commit it landed gone from your
    branch: one that your branch holds again under its trailers moved, it is not lost, and
    the group goes on without paying for that next task twice."""
    _started(work, ONE_GROUP)
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {IN_GROUP[what]}; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3
    assert [t["attempts"] for t in tasks] == [1, 1, 1]
    history = git(work, "rev-list", "HEAD").split()
    assert all(t["change_id"] in history for t in tasks), done.stdout
    assert len(fake_claude.calls()) == 3
    assert (work / "two.txt").exists() and (work / "three.txt").exists()
    if what == "amend":
        assert (work / "one.txt").read_text() == "one\nfix\n"


@pytest.mark.parametrize("vcs,workplace", [("git", "lane"), ("git", "checkout"), ("jj", "lane")])
def test_a_task_you_dropped_before_the_run_stops_no_run(work: Path, fake_claude: FakeClaude,
                                                        vcs: str, workplace: str,
                                                        request: pytest.FixtureRequest) -> None:
    """`git reset --hard HEAD~1` or `jj abandon` of a finished task between two runs is yours
    (`--status` says so, and how to run it again): the next run says it once and does every
    other task, where it stopped after each one with "no longer in the history", exit 1, one
    task per run."""
    if vcs == "jj":
        request.getfixturevalue("jj_bin")
    init_repo(work, vcs)
    (work / "tasks.md").write_text(ONE_GROUP)
    args = ("--vcs", vcs, "--no-distill", "--workplace", workplace)
    first = agent_loop(work, *args, "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    dropped = state_of(work)["tasks"][0]["change_id"]
    if vcs == "jj":
        jj(work, "abandon", dropped)
    else:
        git(work, "reset", "-q", "--hard", "HEAD~1")
    again = agent_loop(work, *args)
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert said.count("task 1's change is no longer in the history") == 1, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3
    assert tasks[0]["change_id"] == dropped
    assert len(fake_claude.task_runs()) == 3
    assert not (work / "one.txt").exists()
    assert (work / "two.txt").exists() and (work / "three.txt").exists()


def _started(work: Path, plan: str = ONE_GROUP, name: str = "tasks.md") -> None:
    """A git repository with a commit of the user's, then the plan committed on it."""
    init_repo(work, "git")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "start", "--allow-empty")
    _plan_commit(work, plan, name)


def _plan_commit(work: Path, plan: str = ONE_GROUP, name: str = "tasks.md") -> None:
    (work / name).write_text(plan)
    git(work, "add", name)
    git(work, "commit", "-qm", f"the plan {name}")


def test_a_task_of_another_plan_with_the_same_text_is_not_your_task_moved(
        work: Path, fake_claude: FakeClaude) -> None:
    """Plan tasks-v2.md holds task 1's text too: its commit's trailers (`Agent-Loop-Plan:
    tasks-v2`) name another plan, so task 1 of tasks.md reset off the branch mid-run is lost,
    not moved onto that commit, and the run stops."""
    _started(work, ONE_GROUP, "tasks-v2.md")
    other = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "1", plan="tasks-v2.md")
    assert other.returncode == 0, other.stdout + other.stderr
    git(work, "rm", "-q", "one.txt")  # so that task 1 of tasks.md changes it again
    _plan_commit(work)
    hook = 'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then git reset -q --hard HEAD~1; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--on-task", hook)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "no longer" in said, said
    assert "moved" not in said, said


def test_a_redo_reset_away_mid_run_stops_the_run(work: Path, fake_claude: FakeClaude) -> None:
    """`--again` makes a new commit with the same trailers as the task's first one: that new
    commit reset off the branch mid-run is lost (the redo was paid for), not "moved" onto the
    first commit, whose author and time are another's."""
    _started(work)
    first = agent_loop(work, "--vcs", "git", "--no-distill")
    assert first.returncode == 0, first.stdout + first.stderr
    old = state_of(work)["tasks"][0]["change_id"]
    git(work, "rm", "-q", "one.txt")  # so that the redo changes it again
    git(work, "commit", "-qm", "one.txt gone")
    hook = 'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then git reset -q --hard HEAD~1; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--group", "All", "--again",
                      "--on-task", hook)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "no longer" in said, said
    assert "moved" not in said, said
    assert state_of(work)["tasks"][0]["change_id"] != old


def test_a_task_you_rebased_before_a_parallel_run_is_followed(work: Path,
                                                              fake_claude: FakeClaude) -> None:
    """A finished task's commit you rebased between two runs: the first lane of a parallel run
    finds it moved before any task and hands its new id to the controller, which writes the
    record (a lane writes none), while the other lane waits for that look."""
    _started(work, PLAN)
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    old = state_of(work)["tasks"][0]["change_id"]
    git(work, "checkout", "-qb", "base", "HEAD~1")
    (work / "u.txt").write_text("u\n")
    git(work, "add", "u.txt")
    git(work, "commit", "-qm", "base")
    git(work, "checkout", "-q", "main")
    git(work, "rebase", "-q", "base")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2", timeout=60)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "task 1's change moved" in said, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3
    assert tasks[0]["change_id"] != old
    assert tasks[0]["change_id"] in git(work, "rev-list", "HEAD").split()


MID_RUN = {
    # Task 1 undone while the run goes on: the revert lands below tasks 2 and 3.
    "revert": ("git revert --no-edit HEAD >/dev/null", "task 1 was reverted by"),
    # Task 1's message reworded, its trailers gone with it: its commit leaves the branch.
    "amend": ("git commit -q --amend -m 'task one, my words'",
              "task 1's change is no longer in the history"),
}


@pytest.mark.parametrize("what", sorted(MID_RUN))
@pytest.mark.parametrize("workplace", ["lane", "checkout"])
def test_status_after_the_run_says_what_you_did_to_a_task_mid_run(
        work: Path, fake_claude: FakeClaude, what: str, workplace: str) -> None:
    """The mark the run leaves (so `--status` asks git nothing) is never taken over a commit of
    yours the run did not read: `--status` says your revert or amend as it does one made
    after the run."""
    _started(work, PLAN)
    command, said = MID_RUN[what]
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {command}; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace,
                      "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    status = agent_loop(work, "--status")
    assert said in status.stdout + status.stderr, status.stdout


def test_a_task_you_keep_reverted_is_read_for_once_a_run_not_after_every_task(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # A task you reverted on purpose stays reverted: the run's history reads found it after
    # every task (the mark is never taken over it), one `git log` of the whole branch a task.
    _started(work, "- a\n  FAKE: write a.txt 1\n- b\n  FAKE: write b.txt 2\n")
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    git(work, "revert", "--no-edit", git(work, "rev-parse", "HEAD~1").strip())
    with (work / "tasks.md").open("a") as plan:
        plan.write("- c\n  FAKE: write c.txt 3\n- d\n  FAKE: write d.txt 4\n"
                   "- e\n  FAKE: write e.txt 5\n")
    git(work, "commit", "-qam", "more")
    shims, log = tmp_path / "shims", tmp_path / "git.log"
    shims.mkdir()
    real = shutil.which("git")
    (shims / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (shims / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    done = agent_loop(work, "--vcs", "git", "--no-distill", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    reads = [line for line in log.read_text().splitlines() if " log " in f" {line} "
             and "--grep" in line]
    # One at the start (the plan's edit added tasks: are they done in history?), one after the
    # first task finds your revert; none after the other two.
    assert len(reads) == 2, reads


def test_a_task_you_dropped_before_a_parallel_run_is_said_under_its_own_group(
        work: Path, fake_claude: FakeClaude) -> None:
    """The first lane of a parallel run to look says every dropped task's line: each under the
    task's own group, not under the group of the lane that happened to look (group One's task 1
    was said as `[Two] task 1's change is no longer in the history`)."""
    _started(work, PLAN)
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    git(work, "reset", "-q", "--hard", "HEAD~1")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2", timeout=60)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    lines = [line for line in said.splitlines() if "task 1's change is no longer" in line]
    assert len(lines) == 1 and lines[0].startswith("[One] "), said
