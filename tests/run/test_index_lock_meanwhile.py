"""Your git beside a run (agentloop.vcs.git.run): a `git add` of yours holds the checkout's
`.git/index.lock` for a moment just as agent-loop's own git needs it (a task's commit in your
checkout, a landing's follow). agent-loop waits for it briefly and goes on, where it stopped the
run (`--workplace checkout`: the task's work rolled back, its agent paid again) or left your
checkout behind its branch (a lane's landing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import committed_plan, git, git_project, tasks_of
from tests.support.runner import agent_loop

# Holds `lock` open, as a running git does, once `trigger` exists; for `seconds`, then lets go.
HOLDER = """
import os, sys, time
trigger, lock, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
while not os.path.exists(trigger):
    time.sleep(0.01)
with open(lock, "x"):
    open(trigger + ".held", "w").close()
    time.sleep(seconds)
os.unlink(lock)
"""


def plan(trigger: Path) -> str:
    # Task a's agent ends just as your git has taken the lock.
    return (f"- write a\n  FAKE: write a.txt a\n  FAKE: bash touch {trigger}; "
            f"while [ ! -e {trigger}.held ]; do sleep 0.01; done\n"
            "- write b\n  FAKE: write b.txt b\n")


def held_meanwhile(tmp_path: Path, seconds: float) -> tuple[Path, subprocess.Popen[bytes]]:
    trigger = tmp_path / "trigger"
    text = plan(trigger)
    work = committed_plan(git_project(tmp_path, text), text)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(trigger),
                               str(work / ".git" / "index.lock"), str(seconds)])
    return work, holder


def test_a_task_commit_in_your_checkout_waits_for_your_gits_moment(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work, holder = held_meanwhile(tmp_path, 0.8)
    try:
        done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", "checkout")
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    assert len(fake_claude.task_runs()) == 2  # each task's agent paid once
    assert git(work, "status", "--porcelain") == ""


def test_a_landing_waits_for_your_gits_moment(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work, holder = held_meanwhile(tmp_path, 0.8)
    try:
        done = agent_loop(work, "--vcs", "git", "--no-distill")
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "index.lock is held" not in done.stdout, done.stdout
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    assert git(work, "status", "--porcelain") == ""


def test_a_lock_that_stays_stops_in_one_line_and_the_work_is_kept(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work, holder = held_meanwhile(tmp_path, 60)
    lock = work / ".git" / "index.lock"
    try:
        stopped = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", "checkout")
    finally:
        holder.kill()
        holder.wait()
        lock.unlink(missing_ok=True)  # your git, done at last
    said = stopped.stdout + stopped.stderr
    assert stopped.returncode == 1, said
    assert "Traceback" not in said
    (line,) = [s for s in stopped.stderr.splitlines() if "error" in s]
    assert f"{lock} is held by another git process" in line, said
    assert "the next run brings it back" in said, said
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", "checkout")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    assert len(fake_claude.task_runs()) == 2, "task a's agent was paid again"
    assert git(work, "show", "HEAD~1:a.txt").strip() == "a"


# Your `git switch other` (the same commit, so nothing in the way): it holds the index lock
# while it works, then puts HEAD on `other` and its index in place by renaming the lock, as git
# does.
SWITCHER = """
import os, subprocess, sys, time
trigger, root, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
git_dir = os.path.join(root, ".git")
while not os.path.exists(trigger):
    time.sleep(0.01)
lock = os.path.join(git_dir, "index.lock")
with open(lock, "xb") as held:
    open(trigger + ".held", "w").close()
    time.sleep(seconds)
    subprocess.run(["git", "-C", root, "symbolic-ref", "HEAD", "refs/heads/other"], check=True)
    with open(os.path.join(git_dir, "index"), "rb") as index:
        held.write(index.read())
os.rename(lock, os.path.join(git_dir, "index"))
"""


def test_a_landing_that_waited_for_your_switch_leaves_your_other_branch_alone(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    trigger = tmp_path / "trigger"
    text = plan(trigger)
    work = committed_plan(git_project(tmp_path, text), text)
    git(work, "branch", "other")
    switcher = subprocess.Popen([sys.executable, "-c", SWITCHER, str(trigger), str(work),
                                 "0.5"])
    try:
        done = agent_loop(work, "--vcs", "git", "--no-distill")
    finally:
        switcher.kill()
        switcher.wait()
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/other"
    # The tasks are on main; your checkout is as your switch left it, nothing of theirs staged.
    assert git(work, "status", "--porcelain") == "", done.stdout
    assert not (work / "a.txt").exists() and not (work / "b.txt").exists()
    assert git(work, "show", "main:a.txt").strip() == "a"
    assert git(work, "rev-parse", "other") == git(work, "rev-parse", "main~2")
