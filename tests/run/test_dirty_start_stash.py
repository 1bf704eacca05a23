"""The line of a landing that waits on an untracked file of the user's names `git stash -u`:
followed while the run waits, as a user does, with the plan itself untracked beside it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    # Your notes are in the stash, whole; `git stash pop` refuses on the files that are back
    # (the task's notes, the plan the run put back), and the line says what brings yours back.
    assert git(work, "show", "stash@{0}^3:notes.txt") == "my own notes\n"
    popped = subprocess.run(["git", "stash", "pop"], cwd=work, capture_output=True, text=True)
    assert popped.returncode != 0 and "tasks.md already exists" in popped.stderr
    # Pasted as printed, in a subfolder: the path is the checkout's, not the folder's.
    command = re.search(r"`([^`]*'stash@\{0\}\^3' -- notes.txt)` brings yours back", out)
    assert command is not None, out
    (work / "docs").mkdir()
    subprocess.run(["bash", "-c", command.group(1)], cwd=work / "docs", check=True)
    assert (work / "notes.txt").read_text() == "my own notes\n"
    assert (work / "tasks.md").read_text() == plan


@pytest.mark.parametrize("kind,lanes", [("git", ()), ("git", ("--parallel", "2")), ("jj", ())])
def test_ctrl_c_while_a_landing_waits_on_your_file_keeps_it_and_the_work(
        work: Path, fake_claude: FakeClaude, kind: str, lanes: tuple[str, ...]) -> None:
    import os
    import signal

    from tests.support.runner import agent_loop

    init_repo(work, kind)
    (work / "tasks.md").write_text("- write the notes\n  FAKE: write notes.txt the agent's notes\n")
    (work / "README.md").write_text("my edit\n")
    (work / "notes.txt").write_text("my own notes\n")
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", kind,
                            "--no-distill", "--lane-wait", "60s", *lanes], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           stdin=subprocess.DEVNULL, start_new_session=True)
    events = work / ".agent-loop" / "events.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.poll() is None and \
            not (events.exists() and "LandingWaits" in events.read_text()):
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)
    out = run.communicate(timeout=60)[0]
    assert run.returncode == 130, out
    assert (work / "notes.txt").read_text() == "my own notes\n"
    assert (work / "README.md").read_text() == "my edit\n"
    if kind == "git":
        assert git(work, "log", "--format=%s") == "initial\n"
    assert [t["status"] for t in state_of(work)["tasks"]] == ["held"]
    # Your file moved away, the re-run lands the agent's work without paying for it again.
    (work / "notes.txt").rename(work / "my-notes.txt")
    calls = len(fake_claude.calls())
    again = agent_loop(work, "--vcs", kind, "--no-distill")
    assert again.returncode == 0, out + again.stdout + again.stderr
    assert (work / "notes.txt").read_text() == "the agent's notes\n"
    assert (work / "README.md").read_text() == "my edit\n"
    assert len(fake_claude.calls()) == calls
    # The landing names what it brought (it said "0 file(s) changed", and kept no file).
    landed = state_of(work)["tasks"][0]
    assert landed["files"] == ["notes.txt"], landed
    assert "1 file(s) changed" in again.stdout, again.stdout
