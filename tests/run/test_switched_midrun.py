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
