"""A repository copied whole (`cp -a`) while a killed run left its lane: git's two links of the
lane (its `.git` file, its registration's `gitdir`) are absolute, so the copy's point at the
original's. Each repository's next run works in its own lane, its tasks land in its own history
and the commit each task records is that task's own, nothing of either paid again. Real git,
agent-loop as a process, the fake claude."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from tests.run.test_serial_lane_leftovers import THREE
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop, half_done_in_the_serial_lane

ARGS = ("--vcs", "git", "--no-distill")


def killed_then_copied(work: Path, tmp_path: Path) -> Path:
    """`work` with a run killed (kill -9) while task two's agent worked in the lane, then
    copied whole as a person does to try something; the copy."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(THREE)
    killed_in_the_lane(work, tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(work, copy, symlinks=True)  # `cp -a`
    return copy


def killed_in_the_lane(checkout: Path, tmp_path: Path) -> None:
    """agent-loop killed (kill -9) in `checkout` while task two's agent worked in its lane."""
    tool, _ = half_done_in_the_serial_lane(checkout, tmp_path / "directives.json", "task two",
                                           list(ARGS))
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=60)


def on_its_own_history(work: Path) -> None:
    """Every task completed, each recording a commit of this repository's branch that is that
    task's own (its subject and file), the one `git revert` takes back."""
    history = git(work, "log", "--format=%H %s").splitlines()
    subjects = dict(line.split(" ", 1) for line in history)
    for task in state_of(work)["tasks"]:
        assert task["status"] == "completed", task
        sha = task["commit_id"]
        assert subjects.get(sha, "").endswith(task["summary"]), (task["summary"], history)
        word = task["summary"].split()[1]
        assert git(work, "show", "--name-only", "--format=", sha).split() == [f"{word}.txt"]


def paid_once_for_task_one(fake_claude: FakeClaude) -> bool:
    return len([p for p in fake_claude.task_prompts() if "write one.txt" in p]) == 1


def test_a_copy_of_a_repository_with_a_lane_runs_in_its_own_lane(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    copy = killed_then_copied(work, tmp_path)
    lane_link = next((work / ".agent-loop" / "lanes").iterdir()) / ".git"
    before = lane_link.read_text()
    ran = agent_loop(copy, *ARGS)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert f"copy from {work}" in said, said
    on_its_own_history(copy)
    assert lane_link.read_text() == before  # the original's lane is left as it was
    assert "two.txt" not in git(work, "log", "--all", "--name-only", "--format=")
    again = agent_loop(work, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    on_its_own_history(work)
    assert paid_once_for_task_one(fake_claude)


def test_after_git_worktree_repair_in_the_copy_the_original_lands_its_own_commits(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The repair git suggests, run in the copy, points the original's lane at the copy's git
    dir: the original's next run committed its tasks into the copy and recorded task one's
    commit for them."""
    copy = killed_then_copied(work, tmp_path)
    git(copy, "worktree", "repair")
    ran = agent_loop(work, *ARGS)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert "git worktree repair" in said, said
    on_its_own_history(work)
    assert "two.txt" not in git(copy, "log", "--all", "--name-only", "--format=")
    again = agent_loop(copy, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    on_its_own_history(copy)
    assert paid_once_for_task_one(fake_claude)


def test_a_repository_moved_with_a_lane_goes_on_in_it_and_says_moved(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Moved (`mv`), not copied: the lane's links name a place that is gone; the run goes on
    in the lane, and its line says moved, naming no copy nor lane there."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(THREE)
    killed_in_the_lane(work, tmp_path)
    moved = tmp_path / "moved"
    shutil.move(work, moved)
    ran = agent_loop(moved, *ARGS)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert f"came with this repository, moved from {work}" in said, said
    assert "repository's copy" not in said and "left as it is" not in said, said
    on_its_own_history(moved)
    assert paid_once_for_task_one(fake_claude)


def test_a_worktree_of_yours_deleted_with_a_lane_is_no_repository_moved(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """A linked worktree you made (`git worktree add`), its run killed while it had a lane,
    then deleted (`rm -rf`): the same plan's next run in the main checkout finds that lane's
    registration naming a gone folder, as a moved repository's does; but this repository was
    never moved, and the lane gone was the worktree's, not this checkout's."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(THREE)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    yours = tmp_path / "yours"
    git(work, "worktree", "add", "-q", str(yours))
    killed_in_the_lane(yours, tmp_path)
    shutil.rmtree(yours)
    ran = agent_loop(work, *ARGS)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert "came with this repository" not in said, said
    on_its_own_history(work)
