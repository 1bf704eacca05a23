"""A lane's branch goes once its work is on the main line; what is not there is kept under
refs/agent-loop/kept/ first (agentloop.vcs.git.teardown.keep_unlanded). Work you squashed or
amended on the main line is there, under other commits: nothing to keep, nothing to say."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.git.teardown import keep_unlanded
from tests.support.repos import git, init_repo


def lane_with_two_tasks(work: Path) -> str:
    """A repository whose main line has the lane branch's two task commits landed; the name
    of the main branch."""
    init_repo(work, "git")
    main = git(work, "symbolic-ref", "--short", "HEAD").strip()
    git(work, "switch", "-q", "-c", "agent-loop/tasks-serial")
    for name in ("one", "two"):
        (work / f"{name}.txt").write_text(f"{name}\n")
        git(work, "add", f"{name}.txt")
        git(work, "commit", "-qm", f"agent-loop: A / {name}")
    git(work, "switch", "-q", main)
    git(work, "merge", "-q", "--ff-only", "agent-loop/tasks-serial")
    return main


def test_tasks_you_squashed_on_the_main_line_are_not_kept_aside(work: Path) -> None:
    main = lane_with_two_tasks(work)
    git(work, "reset", "-q", "--soft", "HEAD~2")
    git(work, "commit", "-qm", "one and two")
    assert keep_unlanded(work, "agent-loop/tasks-serial", f"refs/heads/{main}") is None
    assert git(work, "for-each-ref", "refs/agent-loop/") == ""


def test_a_task_whose_change_is_not_on_the_main_line_is_kept(work: Path) -> None:
    main = lane_with_two_tasks(work)
    git(work, "reset", "-q", "--hard", "HEAD~1")  # task two dropped from the main line
    (work / "two.txt").write_text("yours, not the task's\n")
    git(work, "add", "two.txt")
    git(work, "commit", "-qm", "your two")
    kept = keep_unlanded(work, "agent-loop/tasks-serial", f"refs/heads/{main}")
    assert kept == "refs/agent-loop/kept/tasks-serial"
    assert git(work, "show", f"{kept}:two.txt") == "two\n"
