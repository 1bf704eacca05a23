"""A run names a finished task's change you took back (`jj abandon`, `git reset --hard`) in one
line before its first task (docs/how-to/undo.md); a run with no task left to run says the same
line, not only `--status`."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import committed_plan, git, git_project, init_repo, jj, state_of
from tests.support.runner import agent_loop

PLAN = "- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n"


def _said_once(work: Path, vcs: str, fake_claude: FakeClaude) -> str:
    done = agent_loop(work, "--no-distill", "--vcs", vcs)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "0 of 2 task(s) to run" in said and len(fake_claude.task_runs()) == 2, said
    lines = [line for line in said.splitlines() if "is no longer in the history" in line]
    assert len(lines) == 1, said
    return lines[0]


def test_a_run_with_nothing_to_run_names_an_abandoned_change(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    # The run said only "0 of 2 task(s) to run" and "done": the change you abandoned, named
    # before the first task of a run with tasks, went unsaid.
    init_repo(work, "jj")
    (work / "tasks.md").write_text(PLAN)
    assert agent_loop(work, "--no-distill", "--vcs", "jj").returncode == 0
    jj(work, "abandon", state_of(work)["tasks"][1]["change_id"])
    line = _said_once(work, "jj", fake_claude)
    assert line.endswith("task 2's change is no longer in the history (abandoned, or not on "
                         "this branch): it stays done; `agent-loop tasks.md --task 2 --again` "
                         "does it once more"), line


def test_a_run_with_nothing_to_run_names_a_commit_you_dropped(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = committed_plan(git_project(tmp_path, PLAN), PLAN)
    assert agent_loop(work, "--no-distill", "--vcs", "git").returncode == 0
    git(work, "reset", "-q", "--hard", "HEAD~1")
    line = _said_once(work, "git", fake_claude)
    assert "task 2's change is no longer in the history" in line and "--task 2 --again" in line
