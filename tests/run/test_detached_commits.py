"""A run on a detached HEAD (a `git checkout v1.2`, a bisect) commits its tasks on no branch,
as its first line says; once you check out a branch, `--status` says each task's change is no
longer in the history. It names the commit that holds it, and the `git cherry-pick` that
brings it back while git keeps it, beside the `--task N --again` that pays the agent again.
Real git, agent-loop as a process, the fake claude."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop


def test_a_task_done_on_a_detached_head_is_named_by_its_commit_once_you_leave_it(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("## G\n- [ ] one\n  FAKE: write one.txt one\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    git(work, "checkout", "-q", "--detach")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    commit = state_of(work)["tasks"][0]["change_id"][:12]
    git(work, "checkout", "-q", "main")
    status = agent_loop(work, "--status").stdout
    line = next(line for line in status.splitlines() if "no longer in the history" in line)
    assert f"`git cherry-pick {commit}`" in line, status
    git(work, "cherry-pick", commit)
    assert (work / "one.txt").read_text() == "one\n"
    calls = len(fake_claude.task_runs())
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0 and len(fake_claude.task_runs()) == calls, again.stdout
    assert "no longer in the history" not in agent_loop(work, "--status").stdout
