"""Two checkouts of one repository (`git worktree add ../wt -b side`), each running its own plan:
a landing's mark (`refs/agent-loop/landed/<lane commit>`, what keeps a killed run from landing a
task twice) lives in the common git dir. Each checkout keeps its marks apart, as its lanes are
(agentloop.vcs.lanes.linked_checkout): the fake agent's commits, alike to the second, are one and
the same commit in both, and neither checkout's landing or cleanup may take the other's mark."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop

# Two groups in lanes side by side: B's task ends later, so its commit lands second, replayed
# onto A's, and that landing leaves a mark.
PLAN = """\
## A
- task a
  FAKE: write a.txt a

## B
- task b
  FAKE: sleep 1
  FAKE: write b.txt b
"""
ARGS = ("--vcs", "git", "--no-distill", "--parallel", "2")

# A `git` whose first landing that leaves a mark (the `update-ref --stdin` that creates
# refs/agent-loop/landed/…) is done, and then: `kill` kills agent-loop with it, `stall` holds it
# there until $MARK_GO exists (another checkout's run meanwhile).
AFTER_THE_MARK = """#!/bin/sh
case " $* " in *" update-ref --stdin "*)
    script=$(cat)
    printf '%s\\n' "$script" | "$MARK_REAL" "$@"
    code=$?
    case "$script" in *"create refs/agent-loop/landed"*)
        if [ ! -e "$MARK_MADE" ]; then
            touch "$MARK_MADE"
            if [ "$MARK_MODE" = kill ]; then kill -9 $PPID; exit 137; fi
            while [ ! -e "$MARK_GO" ]; do sleep 0.05; done
        fi ;;
    esac
    exit $code ;;
esac
exec "$MARK_REAL" "$@"
"""


def _twins(tmp_path: Path) -> tuple[Path, Path]:
    main, wt = tmp_path / "main", tmp_path / "wt"
    main.mkdir()
    (main / "README.md").write_text("hello\n")
    init_repo(main, "git")
    (main / "tasks.md").write_text(PLAN)
    git(main, "add", "tasks.md")
    git(main, "commit", "-qm", "the plan")
    git(main, "worktree", "add", "-q", str(wt), "-b", "side")
    return main, wt


def held_after_the_mark(tmp_path: Path, checkout: Path, mode: str, plan: str = "tasks.md"
                       ) -> subprocess.Popen[bytes]:
    """`agent-loop PLAN` in `checkout`, up to just after its first landing that leaves a mark
    (MARK_MODE `mode`: `kill` kills it there, `stall` holds it until `mark-go` is made)."""
    folder = tmp_path / "mark-git"
    folder.mkdir()
    (folder / "git").write_text(AFTER_THE_MARK)
    (folder / "git").chmod(0o755)
    made = tmp_path / "mark-made"
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
           "MARK_REAL": str(shutil.which("git")), "MARK_MADE": str(made),
           "MARK_GO": str(tmp_path / "mark-go"), "MARK_MODE": mode, "NO_COLOR": "1"}
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", plan, *ARGS], cwd=checkout,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not made.exists():
        assert tool.poll() is None or mode == "kill", tool.communicate()[0].decode()
        assert time.monotonic() < deadline, "no landing left a mark"
        time.sleep(0.05)
    return tool


def _marks(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/agent-loop/").split()


def _landed_once(repo: Path, branch: str) -> None:
    subjects = git(repo, "log", "--format=%s", branch).splitlines()
    assert sorted(s for s in subjects if s.startswith("agent-loop:")) == [
        "agent-loop: A / task a", "agent-loop: B / task b"], subjects
    assert git(repo, "show", f"{branch}:b.txt").strip() == "b"


def test_a_killed_runs_mark_outlives_the_other_checkouts_run(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    killed = held_after_the_mark(tmp_path, main, "kill")
    assert killed.wait(timeout=60) == -9
    marks = _marks(main)
    assert len(marks) == 1, marks
    # The linked checkout runs the same plan, its commits the very same ones.
    theirs = agent_loop(wt, *ARGS)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert [t["status"] for t in state_of(wt)["tasks"]] == ["completed", "completed"]
    _landed_once(wt, "side")
    assert marks[0] in _marks(main), "the linked checkout's run took the main checkout's mark"
    # The main checkout's re-run finds its landing done: each task once on main.
    again = agent_loop(main, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    _landed_once(main, "main")
    assert [t["status"] for t in state_of(main)["tasks"]] == ["completed", "completed"]


def test_both_checkouts_at_once_with_the_same_commits(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    held = held_after_the_mark(tmp_path, main, "stall")
    try:
        theirs = agent_loop(wt, *ARGS)
    finally:
        (tmp_path / "mark-go").touch()
    said = held.communicate(timeout=120)[0].decode()
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert held.returncode == 0, said
    _landed_once(wt, "side")
    _landed_once(main, "main")
    assert _marks(main) == []


def test_a_linked_checkouts_mark_from_before_the_upgrade_still_counts_there(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    killed = held_after_the_mark(tmp_path, wt, "kill")
    assert killed.wait(timeout=60) == -9
    (mark,) = _marks(main)
    assert not mark.startswith("refs/agent-loop/landed/"), mark
    # Where agent-loop before this one left it: under the main checkout's name.
    old = "refs/agent-loop/landed/" + mark.rsplit("/", 1)[1]
    git(main, "update-ref", old, mark)
    git(main, "update-ref", "-d", mark)
    again = agent_loop(wt, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    _landed_once(wt, "side")
    # Counted, then dropped with the task's landing: left, it would count in the main checkout
    # for a lane commit alike there (a main checkout's run reads that name as its own older one).
    assert _marks(main) == [], "the mark from before the upgrade outlived its task"
