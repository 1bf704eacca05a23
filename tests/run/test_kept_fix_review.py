"""Ctrl+C after a task's own agent run succeeded, while a fix run or the reviewer works on it:
the next run brings the finished work back from where it was kept and goes on from the checks,
without paying the task's agent again (as after a Ctrl+C in the checks: test_kept_aside)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.test_kept_aside import ctrl_c, project, start, wait_for
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, jj, state_of
from tests.support.runner import agent_loop, plain_shell

pytestmark = pytest.mark.usefixtures("plain_shell")
assert plain_shell  # the fixture, imported for the mark above


@pytest.mark.parametrize("kind", ["git", "jj"])
@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_the_run_after_ctrl_c_in_a_fix_run_brings_the_work_back(
        tmp_path: Path, kind: str, workplace: str, fake_claude: FakeClaude) -> None:
    work = project(tmp_path, kind, "## G\n- the task\n  FAKE: write a.txt a\n")
    fixing = tmp_path / "fixing"
    # Passes before the agent (the baseline) and once fixed.txt is there; fails once after the
    # agent, its output telling the fix run to write fixed.txt and stay at work (the Ctrl+C).
    check = (f"test -f a.txt || exit 0; test -f fixed.txt && exit 0; echo 'FAKE: write fixed.txt "
             f"fixed'; echo 'FAKE: bash touch {fixing}'; echo 'FAKE: pause 30'; exit 1")
    args = ("--vcs", kind, "--workplace", workplace, "--check", check)
    child = start(work, *args)
    wait_for(child, fixing)
    ctrl_c(child)
    paid = len(fake_claude.task_prompts())
    assert paid == 2  # the task's run and the fix run
    assert not (work / "a.txt").exists()
    again = agent_loop(work, *args, "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_prompts()) == paid, again.stdout  # no agent run at all
    assert "its agent had finished" in again.stdout, again.stdout
    assert (work / "a.txt").read_text() == "a\n"
    assert (work / "fixed.txt").read_text() == "fixed\n"
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
    listed = git(work, "show", "--name-only", "--format=", "HEAD") if kind == "git" else \
        jj(work, "log", "--no-graph", "-r", "@-", "-T", 'self.diff().files().map(|f| f.path())')
    assert "a.txt" in listed and "fixed.txt" in listed


@pytest.mark.parametrize(("kind", "workplace"), [("git", "lane"), ("jj", "checkout")])
def test_the_run_after_ctrl_c_in_the_review_brings_the_work_back(
        tmp_path: Path, kind: str, workplace: str, fake_claude: FakeClaude) -> None:
    reviewing = tmp_path / "reviewing"
    work = project(tmp_path, kind, f"## G\n- the task\n  FAKE: write a.txt a\n"
                                   f"  FAKE: review-hold {reviewing}\n")
    args = ("--vcs", kind, "--workplace", workplace, "--review")
    child = start(work, *args)
    wait_for(child, reviewing)  # the reviewer is at work on the finished change
    ctrl_c(child)
    assert not (work / "a.txt").exists()
    again = agent_loop(work, *args, "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    developer = [c for c in fake_claude.task_runs() if "Read,Grep,Glob" not in c["argv"]]
    assert len(developer) == 1, again.stdout  # the task's agent was paid once
    assert "its agent had finished" in again.stdout, again.stdout
    assert (work / "a.txt").read_text() == "a\n"
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task


def test_two_ctrl_c_in_fix_runs_in_a_row_still_pay_the_task_agent_once(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The work brought back after one stopped fix run, stopped in its next fix run again:
    the run after that brings it back once more, the task's own agent still paid once."""
    work = project(tmp_path, "git", "## G\n- the task\n  FAKE: write a.txt a\n")
    fixing = tmp_path / "fixing"
    # Fails after the agent until fixed.txt is there; the fix run says it is at work and
    # stays (the Ctrl+C) before it writes fixed.txt, only while `fixing` is not there yet.
    check = (f"test -f a.txt || exit 0; test -f fixed.txt && exit 0; test -f {fixing} && "
             f"echo 'FAKE: write fixed.txt fixed' && exit 1; echo 'FAKE: bash touch {fixing}'; "
             "echo 'FAKE: pause 30'; exit 1")
    args = ("--vcs", "git", "--workplace", "lane", "--check", check)
    for _ in range(2):
        fixing.unlink(missing_ok=True)
        child = start(work, *args)
        wait_for(child, fixing)
        ctrl_c(child)
        assert not (work / "a.txt").exists()
    developer = [p for p in fake_claude.task_prompts() if "FAKE: write a.txt" in p]
    assert len(developer) == 1
    again = agent_loop(work, *args, "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len([p for p in fake_claude.task_prompts() if "FAKE: write a.txt" in p]) == 1
    assert (work / "a.txt").read_text() == "a\n" and (work / "fixed.txt").exists()
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
