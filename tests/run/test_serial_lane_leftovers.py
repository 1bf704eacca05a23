"""What one group's agent leaves in a sequential run's one lane, and what the user does in their
checkout between groups: nothing of it reaches a later task's commit, nothing of the user's is
lost, and the run lands on the branch it started on."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, state_of
from tests.support.runner import agent_loop, half_done_in_the_serial_lane

LEFTOVERS = """\
## Build
- build it
  FAKE: write g1.txt one
  FAKE: bash mkdir -p build && echo object > build/out.o
- a stray file, then a failure
  FAKE: write stray.txt stray
  FAKE: fail 9

## Use
- use it
  FAKE: bash test -f build/out.o && echo seen > saw-build.txt
  FAKE: bash test -f stray.txt && echo seen > saw-stray.txt
  FAKE: write g2.txt two
"""


def test_a_groups_ignored_and_failed_files_reach_no_later_commit(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / ".gitignore").write_text("build/\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-qm", "ignore build")
    (work / "tasks.md").write_text(LEFTOVERS)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1",
                      "--max-failures", "5")
    assert done.returncode != 0, done.stdout + done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "failed", "completed"]
    # Group 2 went on in the one lane: the build output left ignored is there, as between two
    # tasks of one group; the failed attempt's file was rolled back.
    committed = [files for _, _, files in git_commits(work)]
    assert committed[-2:] == [["g1.txt"], ["g2.txt", "saw-build.txt"]]
    assert not (work / "stray.txt").exists() and not (work / "build").exists()


TWO_GROUPS = """\
## One
- task one
  FAKE: write one.txt one

## Two
- task two
  FAKE: bash test -f mine.txt && echo seen > saw-mine.txt
  FAKE: write two.txt two
"""


def test_your_checkout_on_another_branch_between_groups_is_left_alone(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(TWO_GROUPS)
    # Once group 1 is done, you switch to a branch of your own and commit there.
    yours = ('if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then git checkout -qb mine && '
             'echo mine > mine.txt && git add mine.txt && git commit -qm "my branch"; fi')
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--on-task", yours)
    assert done.returncode == 0, done.stdout + done.stderr
    # Group 2 landed on the branch the run began on, from its tip, not from your branch.
    assert git(work, "log", "-1", "--format=%s", "main").startswith("agent-loop: Two")
    assert git(work, "show", "main:two.txt") == "two\n"
    assert "mine.txt" not in git(work, "ls-tree", "--name-only", "main")
    assert not (work / "saw-mine.txt").exists()
    # Your branch and checkout are as you left them.
    assert git(work, "rev-parse", "--abbrev-ref", "HEAD").strip() == "mine"
    assert git(work, "log", "-1", "--format=%s", "mine").strip() == "my branch"
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""



def test_a_second_plans_run_beside_a_running_one_is_refused_before_any_agent(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Two plans of one repository run one after the other (test_serial_lane has that case):
    one started while the other runs stops in one line, paying no agent, and leaves the running
    one's one lane alone."""
    import subprocess
    import sys

    from agentloop.vcs import lanes

    init_repo(work, "git")
    working, go = tmp_path / "working", tmp_path / "go"
    (work / "tasks.md").write_text(
        f"## One\n- first\n  FAKE: bash touch {working}; for i in $(seq 600); do "
        f"test -f {go} && break; sleep 0.05; done\n  FAKE: write one.txt 1\n\n"
        "## Two\n- second\n  FAKE: write two.txt 2\n")
    (work / "other.md").write_text("## Other\n- other\n  FAKE: write other.txt o\n")
    first = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--no-distill"], cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    try:
        while not working.exists() and first.poll() is None:
            time.sleep(0.02)
        other = agent_loop(work, "--vcs", "git", "--no-distill", plan="other.md")
    finally:
        go.touch()
        out = first.communicate(timeout=180)[0]
    assert other.returncode == 1 and "another agent-loop run holds" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
    assert len(agent_cwds(fake_claude)) == 2  # the first run's two tasks, no other
    assert first.returncode == 0, out
    assert not (work / "other.txt").exists()
    assert not (work / ".agent-loop" / "lanes" / (lanes.plan_key("other.md") + "-serial")).exists()


def agent_cwds(fake: FakeClaude) -> list[str]:
    return [c["cwd"] for c in fake.calls() if "--output-format" in c["argv"]]


THREE = """\
## One
- task one
  FAKE: write one.txt one

## Two
- task two
  FAKE: write two.txt two

## Three
- task three
  FAKE: write three.txt three
"""


@pytest.mark.parametrize("kind,drop_two", [("git", False), ("git", True), ("jj", True)])
def test_ctrl_c_in_a_later_group_then_a_rerun(work: Path, tmp_path: Path,
                                              fake_claude: FakeClaude, kind: str,
                                              drop_two: bool) -> None:
    """Ctrl+C while group 2's agent works in the one lane: its half-done file is dropped, and
    the re-run (with group 2 as it was, or deleted from the plan meanwhile) finishes in the
    lane and leaves nothing behind."""
    import os
    import signal

    init_repo(work, kind)
    (work / "tasks.md").write_text(THREE)
    args = ["--vcs", kind, "--no-distill"]
    tool, lane = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "task two",
                                              args)
    os.killpg(tool.pid, signal.SIGINT)
    assert tool.wait(timeout=60) == 130
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "interrupted",
                                                               "pending"]
    assert not (lane / "half.txt").exists()
    if drop_two:
        (work / "tasks.md").write_text(THREE.replace(
            "## Two\n- task two\n  FAKE: write two.txt two\n\n", ""))
    again = agent_loop(work, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "three.txt").exists() and (work / "two.txt").exists() != drop_two
    assert not (work / "half.txt").exists()
    if kind == "git":
        assert "half.txt" not in git(work, "log", "--name-only", "--format=")
    assert not lane.exists()
    if kind == "git":
        assert git(work, "worktree", "list").count("\n") == 1
        assert "agent-loop/" not in git(work, "branch", "--list")


def test_the_agents_amend_in_its_lane_is_set_aside_before_the_rerun_builds_on_it(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The agent amends your tip commit in its lane (once): the run stops. The rerun does not
    build on that rewrite, which is not on your branch: the lane goes back to your branch, its
    rewrite kept aside, and task 1's file lands on your branch."""
    init_repo(work, "git")
    once = tmp_path / "once"
    (work / "tasks.md").write_text(
        "## B\n- b1\n  FAKE: write b1.txt b1\n"
        f"  FAKE: bash test -e {once} || {{ touch {once}; "
        "git commit -q --amend -am amended-in-lane; }\n"
        "- b2\n  FAKE: write b2.txt b2\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    (work / "mine.txt").write_text("mine\n")
    git(work, "add", "mine.txt")
    git(work, "commit", "-qm", "my work")
    args = ["--vcs", "git", "--no-distill"]
    first = agent_loop(work, *args)
    assert first.returncode != 0 and once.exists(), first.stdout + first.stderr
    again = agent_loop(work, *args)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "HEAD has moved since" not in out
    assert "amended-in-lane" not in git(work, "log", "--format=%s")
    assert [files for _, _, files in git_commits(work)] == [["b1.txt"], ["b2.txt"]]
    assert (work / "b1.txt").read_text().strip() == "b1"
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"]
    assert re.search(r"its files are kept in commit ([0-9a-f]{12}) \(`git show \1`\)", out), out
