"""A run killed while its lane sat on a detached HEAD that holds the agent's commit (the agent
ran `git checkout --detach` and committed there): the next run never remakes that lane over the
commit, which only the lane's HEAD holds, nor pays the agent again from scratch. It stops with
the repair that takes the commit onto the lane's branch; pasted, the run after it goes on from
that commit. Real git, agent-loop as a process, the fake claude."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.test_agent_commits import WHERE, killed_when_flagged, start, two_groups, work_lost
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, state_of
from tests.support.runner import agent_loop


def detached_then_killed(flags: Path) -> str:
    """An agent that detaches its HEAD, commits there, and is then killed with agent-loop."""
    return (f"\n  FAKE: bash [ -e a.txt ] || {{ git checkout -q --detach && echo a > a.txt"
            " && git add -A && git commit -qm wip"
            f" && echo once >> {flags}/work && echo $PPID $$ > {flags}/pids.tmp"
            f" && mv {flags}/pids.tmp {flags}/pids && exec sleep 60; }}")


def killed_on_a_detached_commit(work: Path, flags: Path, where: str = "lanes") -> None:
    """A run (`--parallel 2`, or the one lane of `--workplace lane`) killed once task 1.1's
    agent committed on a detached HEAD."""
    flags.mkdir()
    init_repo(work, "git")
    (work / "tasks.md").write_text(two_groups(detached_then_killed(flags)))
    child = start(work, where)
    killed_when_flagged(child, flags)  # once the agent committed on a detached HEAD


@pytest.mark.parametrize("where", ["lanes", "one-lane"])
def test_a_lane_killed_on_a_detached_commit_is_kept_and_never_paid_again(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, where: str) -> None:
    flags = tmp_path / "flags"
    killed_on_a_detached_commit(work, flags, where)
    paid = len(fake_claude.task_runs())
    stopped = agent_loop(work, "--vcs", "git", *WHERE[where], "--no-distill")
    assert stopped.returncode != 0, stopped.stdout + stopped.stderr
    said = stopped.stdout + stopped.stderr
    assert "detached HEAD" in said, said
    # No agent of task 1.1 was paid to do its work again from scratch.
    assert [p for p in fake_claude.prompts()[paid:] if "task 1.1" in p] == [], said
    repair = [c for c in said.split("`") if c.startswith("git -C") and "switch -C" in c]
    assert repair, said
    git(work, *repair[0].split()[1:])  # the repair as printed
    done = agent_loop(work, "--vcs", "git", *WHERE[where], "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (flags / "work").read_text() == "once\n"
    commits = {subject: sorted(files) for _, subject, files in git_commits(work)}
    assert commits["agent-loop: Group 1 / task 1.1"] == ["a.txt", "g1t1.txt"], commits
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}
    assert work_lost(work) == []


def test_a_detached_commit_in_a_lane_swept_away_is_kept_under_a_ref(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """You take group 1 out of the plan (its tasks ticked done): the next run sweeps its
    killed lane, as a lane of no group left to run; its detached commit is kept under a ref
    first, and said with the command that shows it."""
    killed_on_a_detached_commit(work, tmp_path / "flags")
    plan = work / "tasks.md"
    plan.write_text(plan.read_text().replace("- task 1.", "- [x] task 1."))
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert work_lost(work) == [], said  # nothing only a reflog, or nothing at all, holds
    shown = [c for c in said.split("`") if c.startswith("git log -p ")]
    assert shown, said
    out = git(work, *shown[0].split()[1:])
    assert "a.txt" in out, said
