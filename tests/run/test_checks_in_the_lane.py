"""The user's checks, run once before the run's first agent, run where the tasks' checks will:
in the run's lane (your last commit, with what `--lane-copy` and `--lane-link` bring), not in
your checkout. A check that passed in your checkout on a file git ignores (a `.env`,
`node_modules`) failed in every task's lane whatever its agent did: each task paid for its
agent, every fix round and every attempt (15 agent runs a task) of a check that could not pass.
Real git, agent-loop as a process, the fake claude."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo
from tests.support.runner import agent_loop

PLAN = "## G\n- [ ] one\n  FAKE: write one.txt one\n- [ ] two\n  FAKE: write two.txt two\n"


def _repo(work: Path) -> None:
    init_repo(work, "git")
    (work / ".gitignore").write_text(".env\n")
    (work / "tasks.md").write_text(PLAN)
    git(work, "add", ".gitignore", "tasks.md")
    git(work, "commit", "-qm", "plan")
    (work / ".env").write_text("TOKEN=1\n")  # yours, ignored: the lane has none of it


def test_a_check_that_needs_an_ignored_file_stops_the_run_before_any_agent(
        work: Path, fake_claude: FakeClaude) -> None:
    _repo(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--check", "test -f .env")
    assert done.returncode == 1, done.stdout + done.stderr
    assert fake_claude.task_runs() == []  # no agent paid for a check that cannot pass
    assert "fails before any task ran" in done.stderr and "--lane-copy" in done.stderr
    assert git(work, "log", "--format=%s").split("\n")[0] == "plan"
    # Brought into the lane, it passes there: the tasks run and land.
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--check", "test -f .env",
                       "--lane-copy", ".env")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 2
    assert (work / "one.txt").exists() and (work / "two.txt").exists()
