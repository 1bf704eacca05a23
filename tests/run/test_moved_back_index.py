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


def _soft_reset_in_your_checkout(tmp_path: Path, yours: bool) -> tuple[Path, str]:
    # A `git reset --soft HEAD~1` in your checkout while the run works: run as you would (no
    # agent's mark in the reflog), or as the agent ran it there (marked).
    unmarked = "env -u GIT_REFLOG_ACTION " if yours else ""
    plan = PLAN.replace("FAKE: bash git update-ref refs/heads/main HEAD~1 ; true",
                        f"FAKE: bash {unmarked}git -C {{root}} reset -q --soft HEAD~1 ; true")
    work = git_project(tmp_path, plan)
    (work / "tasks.md").write_text(plan.replace("{root}", str(work)))
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert ("an agent ran git in your checkout" in said) is not yours, said
    return work, said


def test_your_soft_reset_in_your_checkout_keeps_what_it_staged(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Yours: `git reset --soft` leaves the dropped commit's changes staged, on purpose.
    work, said = _soft_reset_in_your_checkout(tmp_path, yours=True)
    assert "A  one.txt" in git(work, "status", "--porcelain", "--untracked-files=no"), said
    assert (work / "one.txt").read_text().strip() == "one"


def test_an_agents_soft_reset_in_your_checkout_leaves_nothing_staged_as_yours(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The agent's (its reflog entry marked): the dropped task's files were left staged in your
    # checkout as if you had staged them; your checkout follows your branch, as for a move
    # from its lane.
    work, said = _soft_reset_in_your_checkout(tmp_path, yours=False)
    assert git(work, "status", "--porcelain", "--untracked-files=no") == "", said
    assert not (work / "one.txt").exists()


def _plan(moves: str) -> str:
    return ("- task one\n  FAKE: write one.txt one\n"
            f"- task two\n  FAKE: write two.txt two\n  FAKE: bash {moves} ; true\n"
            "- task three\n  FAKE: write three.txt three\n")


def test_your_staged_and_unstaged_edits_stay(tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Your own staged file and unstaged edit, made while the agent works, stay yours when your
    checkout is brought back to your branch."""
    work = tmp_path / "project"
    moves = (f"cd {work} && echo mine > mine.txt && env -u GIT_REFLOG_ACTION git add mine.txt"
             f" && echo edited >> README.md && cd - && git update-ref refs/heads/main HEAD~1")
    work = git_project(tmp_path, _plan(moves))
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    status = git(work, "status", "--porcelain", "--untracked-files=no")
    assert "A  mine.txt" in status, (said, status)
    assert " M README.md" in status, (said, status)
    assert (work / "README.md").read_text().endswith("edited\n")
    assert "one.txt" not in status


def test_your_edit_of_the_dropped_file_stays(tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Your edit of a file of the dropped commit: git's two-tree read-tree refuses, and your
    checkout is left as it was, your edit in it."""
    work = tmp_path / "project"
    moves = (f"echo yours >> {work}/one.txt && git update-ref refs/heads/main HEAD~1")
    work = git_project(tmp_path, _plan(moves))
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    status = git(work, "status", "--porcelain", "--untracked-files=no")
    assert done.returncode != 0, said
    assert (work / "one.txt").read_text().endswith("yours\n"), (said, status)
    assert "AM one.txt" in status, (said, status)
