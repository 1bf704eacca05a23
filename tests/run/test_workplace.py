"""The agent in a working copy of its own for every run (the `workplace` setting): your edits
and new files made while a task runs are never the task's; `--workplace checkout` keeps the
agent in your checkout; a new lane gets the ignored files you name (lane-copy, lane-link) and
your setup command (lane-setup)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, state_of
from tests.support.runner import agent_loop

# What the user does in their checkout while the agent works: acted out by the agent's own
# Bash tool at that moment, so the test needs no clock (agent-loop cannot tell who wrote).
USER_MEANWHILE = "echo 'my edit' >> {root}/README.md; echo mine > {root}/notes-mine.txt"


def one_group(work: Path) -> None:
    (work / "tasks.md").write_text(
        "## Docs\n"
        "- write the guide\n"
        f"  FAKE: bash {USER_MEANWHILE.format(root=work)}\n"
        "  FAKE: write guide.txt the guide\n"
        "- write the index\n"
        "  FAKE: write index.txt the index\n")


def test_your_edits_while_a_task_runs_are_never_the_tasks(work: Path,
                                                          fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    one_group(work)
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill", "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    commits = git_commits(work)
    assert [files for _, _, files in commits[-2:]] in (
        [["guide.txt"], ["index.txt"]], [["index.txt"], ["guide.txt"]])
    # Your edit and your new file: untouched and uncommitted; the agent's files arrived.
    assert (work / "README.md").read_text() == "hello\nmy edit\n"
    assert (work / "notes-mine.txt").read_text() == "mine\n"
    status = git(work, "status", "--porcelain").splitlines()
    assert " M README.md" in status and "?? notes-mine.txt" in status
    assert (work / "guide.txt").read_text() == "the guide\n"
    assert (work / "index.txt").read_text() == "the index\n"
    # The agent worked in a lane; it is gone once its tasks landed.
    calls = [c for c in fake_claude.calls() if "--output-format" in c["argv"]]
    assert calls and all("/.agent-loop/lanes/" in c["cwd"] for c in calls)
    assert git(work, "worktree", "list").count("\n") == 1
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}


def test_in_checkout_the_agent_works_in_your_files_as_before(work: Path,
                                                            fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    one_group(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--allow-dirty",
                      "--workplace", "checkout")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [c for c in fake_claude.calls() if "--output-format" in c["argv"]]
    assert calls and all(Path(c["cwd"]) == work for c in calls)
    # The trade-off: what you changed while the task ran went into its commit.
    first = next(files for _, _, files in git_commits(work) if "guide.txt" in files)
    assert "notes-mine.txt" in first


def test_jj_your_edits_stay_in_your_change(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "jj")
    one_group(work)
    done = agent_loop(work, "--vcs", "jj", "--workplace", "lane", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    state = state_of(work)
    for task in state["tasks"]:
        files = jj(work, "diff", "--name-only", "-r", task["change_id"]).split()
        assert files == [("guide.txt" if task["index"] == 1 else "index.txt")]
    assert (work / "notes-mine.txt").read_text() == "mine\n"
    assert "my edit" in (work / "README.md").read_text()
    assert (work / "guide.txt").exists() and (work / "index.txt").exists()


def test_a_new_lane_gets_your_ignored_files_and_setup(work: Path,
                                                     fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / ".gitignore").write_text(".env\nnode_modules/\nsetup-ran.txt\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-qm", "ignore")
    (work / ".env").write_text("TOKEN=1\n")
    (work / "node_modules" / "left-pad").mkdir(parents=True)
    (work / "node_modules" / "left-pad" / "index.js").write_text("pad\n")
    (work / "tasks.md").write_text(
        "## Build\n- use what is there\n"
        "  FAKE: bash cat .env node_modules/left-pad/index.js setup-ran.txt > seen.txt\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill", "--allow-dirty",
                      "--lane-copy", ".env", "--lane-link", "node_modules",
                      "--lane-setup", "echo ran > setup-ran.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "seen.txt").read_text() == "TOKEN=1\npad\nran\n"
    # Only the agent's file is the task's: not the copy, the link (which `node_modules/` does
    # not ignore) or what the setup made.
    assert git_commits(work)[0][2] == ["seen.txt"]
    assert "lane-setup `echo ran" in done.stdout


HELD_PLAN = """\
## Docs
- reword the readme
  FAKE: write README.md the task's readme

## Code
- write the code
  FAKE: write code.txt code
"""


@pytest.mark.parametrize("parallel", ["1", "2"])
def test_a_lane_waiting_for_your_edits_is_held_after_the_lane_wait(
        work: Path, fake_claude: FakeClaude, parallel: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(HELD_PLAN)
    (work / "README.md").write_text("my edit, not committed\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill",
                      "--allow-dirty", "--lane-wait", "1s", "--parallel", parallel)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "look at: task 1 is held: your uncommitted edits to README.md" in done.stdout
    assert "`agent-loop tasks.md" in done.stdout  # the command that finishes it
    tasks = {t["group"]: t for t in state_of(work)["tasks"]}
    assert tasks["Docs"]["status"] == "held" and tasks["Code"]["status"] == "completed"
    assert (work / "README.md").read_text() == "my edit, not committed\n"
    assert (work / "code.txt").exists()  # the other group went on
    status = agent_loop(work, "--status").stdout
    assert "held" in status and "README.md" in status
    waits = [json.loads(line) for line in
             (work / ".agent-loop" / "events.jsonl").read_text().splitlines()
             if '"LandingWaits"' in line]
    assert waits and waits[0]["files"] == ["README.md"]
    # You stash your edit; the plain re-run lands the held task, paying no agent again.
    git(work, "stash", "-q")
    calls = len(fake_claude.calls())
    again = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill",
                       "--lane-wait", "1s", "--parallel", parallel)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.calls()) == calls, again.stdout
    assert state_of(work)["tasks"][0]["status"] == "completed"
    assert (work / "README.md").read_text() == "the task's readme\n"


def test_jj_a_new_lane_gets_your_ignored_files(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "jj")
    (work / ".gitignore").write_text(".env\nnode_modules/\n")
    (work / ".env").write_text("TOKEN=1\n")
    (work / "node_modules").mkdir()
    (work / "node_modules" / "index.js").write_text("pad\n")
    jj(work, "commit", "-m", "ignore")
    (work / "tasks.md").write_text(
        "## Build\n- use what is there\n"
        "  FAKE: bash cat .env node_modules/index.js > seen.txt\n")
    done = agent_loop(work, "--vcs", "jj", "--workplace", "lane", "--no-distill",
                      "--lane-copy", ".env", "--lane-link", "node_modules")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "seen.txt").read_text() == "TOKEN=1\npad\n"
    change = state_of(work)["tasks"][0]["change_id"]
    assert jj(work, "diff", "--name-only", "-r", change).split() == ["seen.txt"]
    # Nor anywhere else on the main line, nor in your working copy's change.
    assert "node_modules" not in jj(work, "file", "list", "-r", "@")


@pytest.mark.parametrize("path", ["/etc/passwd", "../secrets", ".agent-loop/state.json", ""])
def test_a_lane_path_outside_the_repository_is_a_usage_error(work: Path, path: str) -> None:
    (work / "tasks.md").write_text("- a task\n")
    done = agent_loop(work, "--lane-copy", path, "--dry-run")
    assert done.returncode == 2 and "--lane-copy" in done.stderr, done.stderr


def test_lane_wait_takes_a_duration_from_a_settings_file(work: Path) -> None:
    (work / "tasks.md").write_text("- a task\n")
    (work / "agent-loop.toml").write_text('lane-wait = "2m"\nworkplace = "lane"\n')
    shown = agent_loop(work, "--show-settings")
    assert shown.returncode == 0, shown.stderr
    assert "lane-wait = 120" in shown.stdout and 'workplace = "lane"' in shown.stdout
    (work / "agent-loop.toml").write_text('lane-wait = "soon"\n')
    bad = agent_loop(work, "--show-settings")
    assert bad.returncode == 2 and "lane-wait" in bad.stderr and "10m" in bad.stderr


def test_a_repository_with_no_commit_yet_starts_in_the_checkout(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    git(work, "init", "-q")
    (work / "README.md").unlink()
    (work / "tasks.md").write_text("- first\n  FAKE: write a.txt A\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the repository has no commit yet" in done.stdout
    assert [files for _, _, files in git_commits(work)] == [["a.txt"]]
    (work / "tasks.md").write_text("- first\n  FAKE: write a.txt A\n"
                                   "- second\n  FAKE: write b.txt B\n")
    again = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill")
    assert again.returncode == 0 and "no commit yet" not in again.stdout, again.stdout
    assert (work / "b.txt").exists() and "/.agent-loop/lanes/" in fake_claude.calls()[-1]["cwd"]


def test_status_shows_what_a_landing_waits_for_and_it_lands_once_you_stash(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(HELD_PLAN.split("\n## Code")[0] + "\n")
    (work / "README.md").write_text("my edit, not committed\n")
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--workplace", "lane", "--no-distill", "--allow-dirty",
                            "--lane-wait", "2m"], cwd=work, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    try:
        deadline, status = time.monotonic() + 60, ""
        while "waiting:" not in status and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.2)
            status = agent_loop(work, "--status").stdout
        assert "waiting: waiting since" in status and "README.md" in status, status
        git(work, "stash", "-q")  # what the line asks: the landing goes on by itself
        out, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, out
    assert state_of(work)["tasks"][0]["status"] == "completed"
    assert state_of(work)["tasks"][0].get("waiting") is None
    assert "waiting:" not in agent_loop(work, "--status").stdout


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_ctrl_c_leaves_the_lane_and_your_edits_and_the_same_command_goes_on_in_it(
        work: Path, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text("## G\n- one\n  FAKE: write one.txt 1\n"
                                   "- slow\n  FAKE: write slow.txt x\n")
    directives = work.parent / "directives.json"
    directives.write_text('{"slow": ["FAKE: pause 60"]}')  # only the first run's agent dawdles
    args = ["--vcs", kind, "--workplace", "lane", "--no-distill"]
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(directives)})
    deadline = time.monotonic() + 30
    while not list(work.glob(".agent-loop/lanes/*/slow.txt")) and time.monotonic() < deadline:
        time.sleep(0.05)
    lane = next(iter(work.glob(".agent-loop/lanes/*/slow.txt"))).parent
    # You edit a file and make one while the task runs; then Ctrl+C.
    (work / "README.md").write_text("edited while the task ran\n")
    (work / "notes.txt").write_text("mine\n")
    tool.send_signal(signal.SIGINT)
    _, err = tool.communicate(timeout=30)
    assert tool.returncode == 130, err
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "interrupted"]
    assert (work / "one.txt").exists() and not (work / "slow.txt").exists()
    assert lane.is_dir()  # the lane is left where it was
    # Your checkout is as you left it: your edits there, uncommitted, nothing of the attempt.
    assert (work / "README.md").read_text() == "edited while the task ran\n"
    assert (work / "notes.txt").read_text() == "mine\n"
    if kind == "git":
        assert git(work, "status", "--porcelain").splitlines() == [
            " M README.md", "?? notes.txt", "?? tasks.md"]
    (work / "README.md").write_text("edited after the interrupt\n")
    done = agent_loop(work, *args, *(["--allow-dirty"] if kind == "git" else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert Path(fake_claude.calls()[-1]["cwd"]) == lane  # went on in it
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    assert (work / "slow.txt").exists()
    assert (work / "README.md").read_text() == "edited after the interrupt\n"
    assert (work / "notes.txt").read_text() == "mine\n"
    # Neither task's change holds your files.
    for task, files in zip(tasks, (["one.txt"], ["slow.txt"])):
        if kind == "git":
            held = git(work, "diff-tree", "--no-commit-id", "--name-only", "-r",
                       task["change_id"]).split()
        else:
            held = jj(work, "diff", "--name-only", "-r", task["change_id"]).split()
        assert held == files, task
