"""A task you reverted stays done until you ask (docs/how-to/undo.md), in the checkout that ran
it and in a fresh clone with no `.agent-loop/` (a CI job, a second machine) alike: the clone
reads the revert from history, records the task done, says it was reverted as the first
checkout's `--status` does, and pays for nothing. `--task N --again` runs it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import committed_plan, git, git_project, init_repo, jj, tasks_of
from tests.support.runner import agent_loop

PLAN = "## G\n- t1\n  FAKE: write f1.txt 1\n- t2\n  FAKE: write f2.txt 2\n"


def _reverted_line(where: Path) -> str:
    status = agent_loop(where, "--status")
    assert status.returncode == 0, status.stdout + status.stderr
    return next((line for line in status.stdout.splitlines() if " was reverted by " in line),
                status.stdout)


def test_a_clone_leaves_a_reverted_task_done_as_the_checkout_that_ran_it(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A fresh clone read the revert as "not done" and paid the agent for task 1 again, which
    # the checkout that ran it leaves done.
    work = committed_plan(git_project(tmp_path, PLAN), PLAN)
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    first = git(work, "log", "--format=%H", "--grep", "/ t1").split()[0]
    git(work, "revert", "--no-edit", first)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(work), str(clone))
    dry = agent_loop(clone, "--dry-run")
    assert "2 task(s), 0 to run" in dry.stdout, dry.stdout + dry.stderr
    said = _reverted_line(work)
    revert = git(clone, "rev-parse", "HEAD").strip()
    assert said.startswith(f"task 1 was reverted by {revert[:12]}: a run leaves it done"), said
    # Before any run there: --status says what the run will do, nothing saved.
    assert _reverted_line(clone) == said
    assert not (clone / ".agent-loop" / "state.json").exists()
    run = agent_loop(clone, "--vcs", "git", "--no-distill")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(fake_claude.task_runs()) == 2, run.stdout  # the first checkout's two only
    assert f"reverted since: task 1 by {revert[:12]}" in run.stdout, run.stdout
    assert [(t["status"], t["commit_id"]) for t in tasks_of(clone)][0] == ("completed", first)
    assert _reverted_line(clone) == said
    again = agent_loop(clone, "--vcs", "git", "--no-distill", "--task", "1", "--again")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 3 and (clone / "f1.txt").read_text().strip() == "1"


def test_a_fresh_jj_state_leaves_a_change_you_reverted_done(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    # `jj revert` describes its change "This reverts commit <id>." as git does (`jj backout`
    # is gone); `jj abandon` leaves nothing in the history, for a clone to read.
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "jj")
    (work / "tasks.md").write_text(PLAN)
    assert agent_loop(work, "--vcs", "jj", "--no-distill").returncode == 0
    first = jj(work, "log", "--no-graph", "-r", "::@ & description(glob:'agent-loop: G / t1*')",
               "-T", "commit_id").strip()
    jj(work, "revert", "-r", first, "--insert-before", "@")
    said = _reverted_line(work)
    assert said.startswith("task 1 was reverted by "), said
    shutil.rmtree(work / ".agent-loop")
    run = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(fake_claude.task_runs()) == 2, run.stdout
    by = said.split(" was reverted by ", 1)[1].split(":", 1)[0]  # the revert's commit
    assert f"reverted since: task 1 by {by}," in run.stdout, run.stdout
    assert _reverted_line(work) == said
