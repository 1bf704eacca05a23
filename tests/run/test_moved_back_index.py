"""An agent moves your branch back from its lane (`git update-ref`: refs are shared by every
worktree), dropping the task its run landed before: the run stops, and your checkout, whose
index and files still held the dropped commit, is left matching your branch, not holding
that task's files as staged changes of yours."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project
from tests.support.runner import agent_loop

PLAN = """\
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
  FAKE: bash git update-ref refs/heads/main HEAD~1 ; true
- task three
  FAKE: write three.txt three
"""


def test_your_checkout_follows_your_branch_an_agent_moved_back(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, PLAN)
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "is no longer on it" in said, said
    # Before: "A  one.txt", the dropped task's file staged in your checkout.
    assert git(work, "status", "--porcelain", "--untracked-files=no") == "", said
    assert not (work / "one.txt").exists()


def test_your_soft_reset_in_your_checkout_keeps_what_it_staged(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The move made in your checkout (here by a command run there while the run works, as you
    # would): `git reset --soft` leaves the dropped commit's changes staged, on purpose.
    plan = PLAN.replace("FAKE: bash git update-ref refs/heads/main HEAD~1 ; true",
                        "FAKE: bash git -C {root} reset -q --soft HEAD~1 ; true")
    work = git_project(tmp_path, plan)
    (work / "tasks.md").write_text(plan.replace("{root}", str(work)))
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "A  one.txt" in git(work, "status", "--porcelain", "--untracked-files=no"), said
    assert (work / "one.txt").read_text().strip() == "one"
