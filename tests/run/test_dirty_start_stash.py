"""The line of a landing that waits on an untracked file of the user's names `git stash -u`:
followed while the run waits, as a user does, with the plan itself untracked beside it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of


def test_following_the_stash_hint_lands_the_task_and_keeps_your_file_and_plan(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    plan = "- write the notes\n  FAKE: write notes.txt the agent's notes\n"
    (work / "tasks.md").write_text(plan)  # untracked, as a plan often is
    (work / "notes.txt").write_text("my own notes\n")
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--no-distill", "--lane-wait", "60s"], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           stdin=subprocess.DEVNULL)
    events = work / ".agent-loop" / "events.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.poll() is None and \
            not (events.exists() and "LandingWaits" in events.read_text()):
        time.sleep(0.05)
    stashed = git(work, "stash", "-u")
    out = run.communicate(timeout=120)[0]
    assert run.returncode == 0, stashed + out
    assert "`git stash -u`" in out
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"]
    assert (work / "notes.txt").read_text() == "the agent's notes\n"
    assert (work / "tasks.md").read_text() == plan
    # Your notes are in the stash, whole.
    assert git(work, "show", "stash@{0}^3:notes.txt") == "my own notes\n"
