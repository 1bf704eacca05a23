"""You switch your checkout to a branch of your own while a run works: the tasks go on landing
on the run's branch (agentloop.vcs.git.mainline), and the run's closing undo line, the one a
person reads last, names that branch, since `git revert` on the branch you are on now would
take back nothing of the run's. The common case's line is as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, make_repo
from tests.support.runner import noting_git

PLAN = ("- one\n  FAKE: write a.txt a\n"
        "- two\n  FAKE: bash touch {mark}; while [ ! -e {go} ]; do sleep 0.05; done\n"
        "  FAKE: write b.txt b\n")


def _run_switching(work: Path, tmp_path: Path, switch: bool) -> str:
    """The run's output; `switch`: your checkout goes to a new branch `mine` while task 2's
    agent works (task 1 landed, or landing beside it)."""
    mark, go = tmp_path / "two-began", tmp_path / "two-go"
    (work / "tasks.md").write_text(PLAN.format(mark=mark, go=go))
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md"], cwd=work,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "NO_COLOR": "1"})
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and tool.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert mark.exists(), "task 2's agent never began"
        if switch:
            git(work, "switch", "-q", "-c", "mine")
        go.touch()
        out, _ = tool.communicate(timeout=120)
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    assert tool.returncode == 0, out
    return out


def _undo_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("To undo one task"))


def test_the_undo_line_names_the_branch_the_tasks_landed_on_after_a_switch(
        fake_claude: FakeClaude, tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    out = _run_switching(work, tmp_path, switch=True)
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/mine"
    assert git(work, "log", "--format=%s", "main").splitlines()[-1] == "initial"
    two = git(work, "log", "-1", "--format=%H", "main").strip()
    assert "b.txt" in git(work, "show", "--name-only", "--format=", two)
    line = _undo_line(out)
    # The command as a person would type it, on the branch that holds the commit.
    assert f"git switch main && git revert {two[:12]}" in line, line
    assert "on branch main, not on the one your checkout is on now" in line, line


def test_the_undo_line_is_as_it_was_when_the_checkout_stayed(
        fake_claude: FakeClaude, tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    out = _run_switching(work, tmp_path, switch=False)
    two = git(work, "log", "-1", "--format=%H", "main").strip()
    assert _undo_line(out) == (f"To undo one task, e.g. task 2: git revert {two[:12]} (the other "
                               "tasks' changes stay); `agent-loop tasks.md --status` lists every "
                               "task's change.")


def _status(work: Path, tmp_path: Path, *flags: str) -> tuple[str, list[str]]:
    """`agent-loop tasks.md --status FLAGS`: its output, and the git commands it started."""
    return noting_git(work, tmp_path, "tasks.md", "--status", *flags)


def test_status_after_a_switch_finds_the_tasks_on_the_branch_they_landed_on(
        fake_claude: FakeClaude, tmp_path: Path) -> None:
    # You switched to `mine` before task 2 landed: its change is on main, not in mine's history.
    # --status said every task's change was "no longer in the history" and offered `--again`,
    # paying for work that is on main; it looks on main (the run's mark names it), from files.
    work = make_repo(tmp_path / "work")
    _run_switching(work, tmp_path, switch=True)
    out, calls = _status(work, tmp_path)
    assert "no longer in the history" not in out and "--again" not in out, out
    assert ("the tasks landed on branch main, where their changes are; your checkout is on mine "
            "now (`git switch main` goes back to them)") in out, out
    assert calls == [], calls  # no process: main stands where the run's mark says
    out, _ = _status(work, tmp_path, "--json")
    assert '"landed_on": "main"' in out and '"lost": []' in out, out


def test_status_after_a_switch_reads_the_branch_the_tasks_landed_on_once_it_moved(
        fake_claude: FakeClaude, tmp_path: Path) -> None:
    # main moved on since the run (a commit made in another worktree of it): its history is
    # read, once, and a task's change reverted there is said as such.
    work = make_repo(tmp_path / "work")
    _run_switching(work, tmp_path, switch=True)
    two = git(work, "log", "-1", "--format=%H", "main").strip()
    other = tmp_path / "other"
    git(work, "worktree", "add", "-q", str(other), "main")
    git(other, "revert", "--no-edit", two)
    out, calls = _status(work, tmp_path)
    assert "no longer in the history" not in out, out
    assert "task 2 was reverted by" in out, out
    assert len(calls) == 1 and "refs/heads/main" in calls[0], calls
    # Back on main, as before: its own history, nothing said of a branch.
    git(work, "worktree", "remove", str(other))
    git(work, "switch", "-q", "main")
    out, _ = _status(work, tmp_path)
    assert "task 2 was reverted by" in out and "landed on branch" not in out, out


def test_your_branch_deleted_while_an_agent_works_is_said_in_one_line(
        fake_claude: FakeClaude, tmp_path: Path) -> None:
    # While task 2's agent works you switch to a branch of your own and delete the run's
    # (`git switch -c mine && git branch -D main`). The stop said git's own words, `git
    # rev-list refs/heads/main` failed … fatal: ambiguous argument: now the line that says the
    # branch is gone and how to go on; the finished agent is not paid again on the next run.
    from tests.support.runner import agent_loop

    work = make_repo(tmp_path / "work", "git", {"README.md": "hi\n",
                                                ".gitignore": ".agent-loop/\n"})
    gone = (f"until git -C {work} switch -q -c mine; do sleep 0.05; done; "
            f"until git -C {work} branch -q -D main; do sleep 0.05; done")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt a\n"
                                   f"- two\n  FAKE: write b.txt b\n  FAKE: bash {gone}\n"
                                   "- three\n  FAKE: write c.txt c\n")
    stopped = agent_loop(work, "--no-distill")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    error = stopped.stderr.strip().splitlines()[-1]
    assert error.startswith("agent-loop: error: branch main, which this run lands its tasks on, "
                            "is gone"), stopped.stderr
    assert "fatal:" not in stopped.stderr and "Traceback" not in stopped.stderr, stopped.stderr
    went_on = agent_loop(work, "--no-distill")
    assert went_on.returncode == 0, went_on.stdout + went_on.stderr
    assert len(fake_claude.task_runs()) == 3, went_on.stdout  # task 2's agent ran once
    assert sorted(git(work, "ls-tree", "--name-only", "mine").split()) == [
        ".gitignore", "README.md", "a.txt", "b.txt", "c.txt"]
