"""A re-run after a run that stopped on a usage limit (agentloop.run.waits): the limit's reset
time is kept with the task's record, so the re-run waits for it (or says when it can go on)
before any agent starts, never paying for a run that cannot succeed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import committed_plan, git, git_project, tasks_of
from tests.support.runner import agent_loop


def limited_plan(resets: int) -> str:
    return (f"- write a\n  FAKE: fail 1\n  FAKE: limit {resets}\n  FAKE: write a.txt a\n"
            "- write b\n  FAKE: write b.txt b\n")


def stopped_at_a_limit(tmp_path: Path, resets: int) -> Path:
    plan = limited_plan(resets)
    work = committed_plan(git_project(tmp_path, plan), plan)
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--max-limit-waits", "0")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "usage limit" in first.stderr, first.stderr
    assert [t["status"] for t in tasks_of(work)] == ["pending", "pending"]
    return work


def test_a_rerun_before_the_reset_starts_no_agent_and_says_when(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    resets = int(time.time()) + 3 * 3600
    work = stopped_at_a_limit(tmp_path, resets)
    assert len(fake_claude.task_runs()) == 1
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--max-limit-waits", "0")
    assert again.returncode == 1, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 1, "an agent started before the limit's reset"
    said = again.stdout + again.stderr
    assert time.strftime("%H:%M", time.localtime(resets)) in again.stderr, said
    first = tasks_of(work)[0]
    assert first["status"] == "pending" and first["attempts"] == 0
    assert [a["outcome"] for a in first["history"]] == ["limited"]


def test_a_rerun_waits_for_the_reset_then_runs_the_task(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    resets = int(time.time()) + 4
    work = stopped_at_a_limit(tmp_path, resets)
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    runs = fake_claude.task_runs()
    assert len(runs) == 3 and runs[1]["time"] >= resets, "the agent started before the reset"
    assert "waiting until" in again.stdout, again.stdout
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]


def test_a_rerun_before_a_reviewers_limit_resets_starts_no_agent(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    resets = int(time.time()) + 3 * 3600
    plan = (f"- write a\n  FAKE: write a.txt a\n  FAKE: review-fail 1\n"
            f"  FAKE: review-limit {resets}\n")
    work = committed_plan(git_project(tmp_path, plan), plan)
    args = ("--vcs", "git", "--no-distill", "--review", "--max-limit-waits", "0")
    first = agent_loop(work, *args)
    assert first.returncode == 1 and "usage limit" in first.stderr, first.stdout + first.stderr
    calls = len(fake_claude.calls())
    again = agent_loop(work, *args)
    assert again.returncode == 1, again.stdout + again.stderr
    assert len(fake_claude.calls()) == calls, "an agent started before the limit's reset"
    assert time.strftime("%H:%M", time.localtime(resets)) in again.stderr, again.stderr


@pytest.mark.parametrize("resets", ["1764460800000", "100000000000000000000"])
def test_a_reset_time_no_date_can_hold_stops_as_a_limit_not_an_internal_error(
        tmp_path: Path, fake_claude: FakeClaude, resets: str) -> None:
    # A reset in milliseconds (year 57883) or otherwise garbled: the limit is said and the
    # run stops as at any limit; a time no date can hold is not kept for the re-run.
    plan = f"- write a\n  FAKE: fail 1\n  FAKE: limit {resets}\n  FAKE: write a.txt a\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--max-limit-waits", "0")
    said = first.stdout + first.stderr
    assert first.returncode == 1, said
    assert "internal error" not in said and "usage limit" in first.stderr, said
    assert "a re-run waits" not in said, said
    (task,) = tasks_of(work)
    assert task["status"] == "pending" and task["history"][-1]["outcome"] == "limited"
    assert task["history"][-1]["resets_at"] is None


def test_a_rerun_with_no_task_left_to_run_waits_for_no_limit(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # You did the limited task yourself and ticked its box: no agent is to start, nothing waits.
    resets = int(time.time()) + 3 * 3600
    plan = (f"- [ ] write a\n  FAKE: fail 1\n  FAKE: limit {resets}\n  FAKE: write a.txt a\n")
    work = committed_plan(git_project(tmp_path, plan), plan)
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--max-limit-waits", "0")
    assert first.returncode == 1 and "usage limit" in first.stderr, first.stdout + first.stderr
    (work / "tasks.md").write_text(plan.replace("[ ]", "[x]"))
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--max-limit-waits", "0")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "usage limit" not in again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 1


def stopped_in_the_wait(work: Path, *args: str) -> None:
    """Ctrl+C (SIGINT to the whole group, as a terminal sends it) once the run waits."""
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if "waiting until" in line:
                os.killpg(child.pid, signal.SIGINT)
                break
        child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130


@pytest.mark.parametrize("stop", ["ctrl-c", "out of waits"])
def test_a_rerun_after_a_reviewers_limit_reviews_the_kept_work_only(
        tmp_path: Path, fake_claude: FakeClaude, stop: str) -> None:
    resets = int(time.time()) + 5
    plan = (f"- write a\n  FAKE: write a.txt a\n  FAKE: review-fail 1\n"
            f"  FAKE: review-limit {resets}\n")
    work = committed_plan(git_project(tmp_path, plan), plan)
    args = ("--vcs", "git", "--no-distill", "--review")
    if stop == "ctrl-c":
        stopped_in_the_wait(work, *args)
    else:
        first = agent_loop(work, *args, "--max-limit-waits", "0")
        assert first.returncode == 1 and "usage limit" in first.stderr, first.stderr
    again = agent_loop(work, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "waiting until" in again.stdout, again.stdout
    # The developer once, the reviewer twice (limited, then after the reset).
    runs = fake_claude.task_runs()
    assert len(runs) == 3 and "attempt2" not in again.stdout, "the developer was paid again"
    assert runs[2]["time"] >= resets, "the reviewer started before the reset"
    assert [t["status"] for t in tasks_of(work)] == ["completed"]
    assert (work / "a.txt").read_text().strip() == "a"


def test_a_rerun_after_a_fix_runs_limit_goes_on_from_the_kept_work(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The check fails once the task's file is there; its output is the fix run's prompt, whose
    # FAKE lines make that run write the missing file, then meet a usage limit.
    resets = int(time.time()) + 5
    plan = "- write a\n  FAKE: write a.txt a\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    check = ("test ! -f a.txt || test -f ok.txt || { echo 'FAKE: write ok.txt y'; "
             f"echo 'FAKE: fail 1'; echo 'FAKE: limit {resets}'; exit 1; }}")
    args = ("--vcs", "git", "--no-distill", "--check", check)
    first = agent_loop(work, *args, "--max-limit-waits", "0")
    assert first.returncode == 1 and "usage limit" in first.stderr, first.stderr
    assert len(fake_claude.task_runs()) == 2  # the developer, then its fix run, limited
    again = agent_loop(work, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "waiting until" in again.stdout, again.stdout
    assert "attempt2" not in again.stdout, "the developer was paid again for finished work"
    assert [t["status"] for t in tasks_of(work)] == ["completed"]
    assert git(work, "show", "HEAD:a.txt").strip() == "a"


def test_a_rerun_without_review_after_a_reviewers_limit_lands_the_work_at_once(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # You turned review off: no agent is to start, so the reviewer's reset is not waited for,
    # and the work lands saying it goes without the review the last run began.
    resets = int(time.time()) + 3 * 3600
    plan = (f"- write a\n  FAKE: write a.txt a\n  FAKE: review-fail 1\n"
            f"  FAKE: review-limit {resets}\n")
    work = committed_plan(git_project(tmp_path, plan), plan)
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--review", "--max-limit-waits",
                       "0")
    assert first.returncode == 1 and "usage limit" in first.stderr, first.stdout + first.stderr
    calls = len(fake_claude.calls())
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--no-review",
                       "--max-limit-waits", "0")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert "usage limit" not in said and "waiting until" not in said, said
    assert len(fake_claude.calls()) == calls, "an agent started"
    assert [t["status"] for t in tasks_of(work)] == ["completed"]
    assert git(work, "show", "HEAD:a.txt").strip() == "a"
    (line,) = [s for s in again.stdout.splitlines() if "without the review" in s]
    assert "task 1" in line, said
