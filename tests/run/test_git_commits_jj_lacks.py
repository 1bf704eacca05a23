"""Tasks recorded by git commit ids in a jj run's state (agentloop.run.rebuilt.named_by_jj): a
commit jj's repository holds is named by its jj change id; one it never imported (reset away
with git before jj's repository was made from git's, so on no branch jj took in) is recorded
as such once, and no later run starts a jj process to ask after it again. `--status` says what
it is: a git commit, with no jj change to take back."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, jj, state_of
from tests.support.runner import agent_loop, done_by_git, noting_jj

pytestmark = pytest.mark.usefixtures("jj_bin")

PLAN = """\
## All
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
"""


def _commit_jj_never_saw(tmp_path: Path) -> tuple[Path, str]:
    """Tasks 1 and 2 committed by git, task 2's commit reset away with git, and the state
    holding both by their git commit ids as a jj run's (as a first jj run records the tasks it
    finds in git's history before jj's repository is made); the project and that commit."""
    work = done_by_git(tmp_path, PLAN)
    dropped = git(work, "rev-parse", "HEAD").strip()
    git(work, "reset", "-q", "--hard", "HEAD~1")
    path = work / ".agent-loop" / "state.json"
    state = orjson.loads(path.read_bytes())
    state["vcs"] = "jj"
    path.write_bytes(orjson.dumps(state))
    return work, dropped


def test_a_commit_jj_never_imported_is_asked_after_once(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    work, dropped = _commit_jj_never_saw(tmp_path)
    second, asked = noting_jj(work, tmp_path, "tasks.md", "--vcs", "jj", "--no-distill")
    assert second.returncode == 0, second.stdout + second.stderr
    assert sum(dropped in command for command in asked) == 1, asked
    one, two = state_of(work)["tasks"]
    held = jj(work, "log", "--no-graph", "-r", "@-", "-T", "change_id").strip()
    assert (one["change_id"], two["change_id"]) == (held, dropped), (one, two)
    # A later run, which has a task to do and looks at the history before it, asks jj
    # nothing about it.
    (work / "tasks.md").write_text(PLAN + "- task three\n  FAKE: write three.txt three\n")
    third, asked = noting_jj(work, tmp_path, "tasks.md", "--vcs", "jj", "--no-distill")
    assert third.returncode == 0, third.stdout + third.stderr
    assert not [command for command in asked if dropped in command], asked
    assert len(fake_claude.task_runs()) == 3
    assert state_of(work)["tasks"][1]["change_id"] == dropped


def test_status_says_the_git_commit_and_that_no_jj_change_holds_it(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work, dropped = _commit_jj_never_saw(tmp_path)
    run = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert run.returncode == 0, run.stdout + run.stderr
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    said = status.stdout
    assert f"task 2 was done as git commit {dropped[:12]}" in said, said
    assert "jj's history does not hold" in said, said
    assert f"jj abandon {dropped[:12]}" not in said, said
    assert "`agent-loop tasks.md --task 2 --again` does it once more" in said, said


def test_the_dashboard_shows_the_git_commit_jj_lacks(tmp_path: Path,
                                                     fake_claude: FakeClaude) -> None:
    from agentloop.dashboard.diffs import patch

    work, dropped = _commit_jj_never_saw(tmp_path)
    run = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert run.returncode == 0, run.stdout + run.stderr
    task = state_of(work)["tasks"][1]
    shown = patch(work, "jj", task["change_id"], task["commit_id"])
    assert shown.startswith(f"commit {dropped}\n") and "two.txt" in shown, shown
