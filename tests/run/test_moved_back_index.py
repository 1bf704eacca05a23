"""An agent moves your branch back from its lane (`git update-ref`: refs are shared by every
worktree), dropping the task its run landed before: the run stops, and your checkout, whose
index and files still held the dropped commit, is left matching your branch, not holding
that task's files as staged changes of yours."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

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


def _rewound_past_your_commit(tmp_path: Path, moves: str, *args: str) -> tuple[Path, str]:
    # Your last commit adds keep.txt and the plan; the agent moves your branch back past it
    # (A's agent slower: its landing, a fast-forward, would move the branch on over the move).
    work = tmp_path / "project"
    plan = ("## A\n- [ ] one\n  FAKE: pause 2\n  FAKE: write one.txt one\n"
            f"## B\n- [ ] two\n  FAKE: bash {moves.format(root=work)} ; true\n")
    work = git_project(tmp_path, plan)
    (work / "keep.txt").write_text("keep\n")
    git(work, "add", "keep.txt", "tasks.md")
    git(work, "commit", "-qm", "keep and plan")
    done = agent_loop(work, "--no-distill", *args)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    return work, said


@pytest.mark.parametrize("moves", ["git update-ref refs/heads/main HEAD~1",
                                   "git -C {root} reset -q --hard HEAD~1"])
def test_the_printed_repair_works_as_pasted_and_brings_your_files_back(
        tmp_path: Path, fake_claude: FakeClaude, moves: str) -> None:
    """Your branch moved back past your commit that adds keep.txt and the plan: your checkout
    loses both with it. The plan the run puts back would be an untracked file in the way of the
    repair the stop prints; not put back, the repair brings both back as committed."""
    work, said = _rewound_past_your_commit(tmp_path, moves, "--parallel", "2")
    repair = re.findall(r"then `(git -C \S+ reset --keep \w+)`", said)
    assert repair, said
    committed = git(work, "show", "main@{1}:tasks.md")   # the commit moved back from
    # Before: "error: Untracked working tree file 'tasks.md' would be overwritten by merge."
    done = subprocess.run(["bash", "-c", repair[-1]], cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, (said, done.stderr)
    assert (work / "keep.txt").read_text() == "keep\n"
    assert (work / "tasks.md").read_text() == committed
    assert git(work, "status", "--porcelain", "--untracked-files=no") == ""
    assert "tasks.md left your checkout with your branch moved back; not put back" in said, said


def test_a_plan_your_own_earlier_reset_dropped_is_put_back(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Your branch moved back before the run (your `git reset --hard HEAD~1`), your plan written
    again as it was committed: gone while the run works, it is put back, and no `reset --keep`
    that would undo your reset is offered instead."""
    work = tmp_path / "project"
    plan = f"- task one\n  FAKE: bash rm {work}/tasks.md\n"   # no landing moves the branch on
    work = git_project(tmp_path, plan)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "the plan")
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=work, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"})
    (work / "tasks.md").write_text(plan)
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    assert "tasks.md vanished from disk while this run worked" in said, said
    assert (work / "tasks.md").read_text() == plan, said
