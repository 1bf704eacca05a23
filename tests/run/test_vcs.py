"""The whole tool with real jj and real git: one change per task, revertable one at a time.

The agent is the fake claude here (fast, and it can fail on cue) and the real CLI against the
fake API in the last tests, so both kinds of agent are shown to land in the right change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.claude_cli import agent_loop_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi
from tests.support.repos import git, git_commits, init_repo, jj, jj_changes, state_of
from tests.support.runner import agent_loop

FAKE_TASKS = """\
## Backend
- add the api
  FAKE: write api.txt api
- add the api test
  FAKE: write api_test.txt test

## Docs
- write the readme
  FAKE: write readme.txt readme
- write the changelog
  FAKE: write changelog.txt changes
"""

REAL_TASKS = """\
## Backend
- WRITE api.txt: api
- WRITE api_test.txt: test

## Docs
- WRITE readme.txt: readme
- WRITE changelog.txt: changes
"""

FILES = ["api.txt", "api_test.txt", "readme.txt", "changelog.txt"]
DESCRIPTIONS = ["agent-loop: Backend / add the api", "agent-loop: Backend / add the api test",
                "agent-loop: Docs / write the readme", "agent-loop: Docs / write the changelog"]


def check_jj_history(work: Path) -> None:
    changes = jj_changes(work)
    assert [d for _, d, _ in changes] == DESCRIPTIONS
    assert [f for _, _, f in changes] == [[name] for name in FILES]
    state = state_of(work)
    assert [t["change_id"] for t in state["tasks"]] == [c for c, _, _ in changes]
    # The working copy is a change of no task's, so the user's next edits go nowhere old: in a
    # lane (the default) the user's own change as they left it (README.md, theirs from before
    # the run), in the checkout a new one; our own plain `jj log` snapshots the untracked
    # tasks.md into it, as the user's would.
    at = jj(work, "log", "--no-graph", "-r", "@", "-T",
            'description ++ "|" ++ self.diff().files().map(|f| f.path()).join(",")')
    assert at.strip() in ("|", "|tasks.md", "|README.md,tasks.md")
    jj(work, "abandon", changes[1][0])
    assert sorted(p.name for p in work.glob("*.txt")) == sorted(FILES[:1] + FILES[2:])
    assert [d for _, d, _ in jj_changes(work)] == DESCRIPTIONS[:1] + DESCRIPTIONS[2:]


def check_git_history(work: Path) -> None:
    commits = git_commits(work)
    assert [s for _, s, _ in commits] == DESCRIPTIONS
    assert [f for _, _, f in commits] == [[name] for name in FILES]
    state = state_of(work)
    assert [t["change_id"] for t in state["tasks"]] == [sha for sha, _, _ in commits]
    git(work, "revert", "--no-edit", commits[1][0])
    assert sorted(p.name for p in work.glob("*.txt")) == sorted(FILES[:1] + FILES[2:])
    assert "tasks.md" not in git(work, "log", "--name-only", "--format=")


def test_jj_one_change_per_task_with_fake_agent(work: Path, jj_bin: str,
                                                fake_claude: FakeClaude) -> None:
    jj(work, "git", "init")
    (work / "tasks.md").write_text(FAKE_TASKS)
    done = agent_loop(work)
    assert done.returncode == 0, done.stderr
    assert "jj: created change" in done.stdout and "To undo one task" in done.stdout
    check_jj_history(work)


def test_git_one_commit_per_task_with_fake_agent(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(FAKE_TASKS)
    done = agent_loop(work, "--vcs", "git")
    assert done.returncode == 0, done.stderr
    assert "git revert" in done.stdout
    check_git_history(work)


@pytest.mark.parametrize("kind", ["jj", "git"])
def test_failed_attempts_leave_one_change(work: Path, jj_bin: str, fake_claude: FakeClaude,
                                          kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text("- flaky\n  FAKE: write flaky.txt x\n  FAKE: fail 2\n")
    done = agent_loop(work, "--vcs", kind)
    assert done.returncode == 0, done.stderr
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 3
    assert [a["outcome"] for a in task["history"]] == ["failed", "failed", "completed"]
    if kind == "jj":
        assert [d for _, d, _ in jj_changes(work)] == ["agent-loop: (ungrouped) / flaky"]
    else:
        assert [s for _, s, _ in git_commits(work)] == ["agent-loop: (ungrouped) / flaky"]


@pytest.mark.parametrize("kind", ["jj", "git"])
def test_interrupt_drops_the_attempt_and_keeps_later_user_edits(work: Path, jj_bin: str,
                                                                fake_claude: FakeClaude,
                                                                kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text("## G\n- one\n  FAKE: write one.txt 1\n"
                                   "- slow\n  FAKE: write slow.txt x\n")
    # Only the first run's agent dawdles on "slow", after it wrote slow.txt (a pause among its
    # tool calls, not a sleep before them): interrupted with the attempt's edit in the tree.
    directives = work.parent / "directives.json"
    directives.write_text('{"slow": ["FAKE: pause 60"]}')
    # The agent in your checkout: in a lane (the default), tests/run/test_workplace.py's
    # test_ctrl_c_leaves_the_lane_and_your_edits says what Ctrl+C leaves.
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", kind,
                             "--workplace", "checkout"],
                            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(directives)})
    deadline = time.monotonic() + 30
    while not (work / "slow.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (work / "slow.txt").exists(), "the slow task never wrote its file"
    tool.send_signal(signal.SIGINT)
    _, err = tool.communicate(timeout=30)
    assert tool.returncode == 130, err
    state = state_of(work)["tasks"]
    assert [t["status"] for t in state] == ["completed", "interrupted"]
    assert state[1]["change_id"] is None and state[1]["attempts"] == 0
    assert not (work / "slow.txt").exists()  # the interrupted attempt's edits are gone
    # The user edits files before running again: those edits must survive the re-run.
    (work / "README.md").write_text("edited after the interrupt\n")
    (work / "notes.txt").write_text("mine\n")
    args = ["--vcs", kind, "--workplace", "checkout"] + (["--allow-dirty"] if kind == "git" else [])
    done = agent_loop(work, *args)
    assert done.returncode == 0, done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"]
    assert (work / "slow.txt").exists()
    assert (work / "README.md").read_text() == "edited after the interrupt\n"
    assert (work / "notes.txt").read_text() == "mine\n"
    if kind == "jj":
        described = [d for _, d, _ in jj_changes(work)]
        assert described.count("agent-loop: G / slow") == 1
    else:
        assert [s for _, s, _ in git_commits(work)].count("agent-loop: G / slow") == 1


@pytest.mark.parametrize("setup, vcs_dirs", [
    ("plain", {".jj", ".git"}),
    ("git", {".git"}),   # a git repository stays git (agentloop.vcs.stays_git)
    ("jj", {".jj", ".git"}),
])
def test_auto_picks_jj_when_installed(work: Path, jj_bin: str, fake_claude: FakeClaude,
                                      setup: str, vcs_dirs: set[str]) -> None:
    if setup == "git":
        git(work, "init", "-q")
        git(work, "add", "README.md")
        git(work, "commit", "-qm", "initial")
    elif setup == "jj":
        jj(work, "git", "init")
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n")
    done = agent_loop(work)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in work.iterdir() if p.name in (".jj", ".git")} == vcs_dirs
    if setup == "git":
        assert state_of(work)["vcs"] == "git"
        assert git(work, "log", "--format=%s", "-1") == "agent-loop: (ungrouped) / one\n"
        assert git(work, "symbolic-ref", "HEAD") == "refs/heads/main\n"
        return
    assert state_of(work)["vcs"] == "jj"
    assert [d for _, d, _ in jj_changes(work)] == ["agent-loop: (ungrouped) / one"]


def test_auto_falls_back_to_git_without_jj(work: Path, fake_claude: FakeClaude,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "jj").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n")
    done = agent_loop(work)
    assert done.returncode == 0, done.stderr
    assert (work / ".git").exists() and not (work / ".jj").exists()
    assert state_of(work)["vcs"] == "git"
    assert "agent-loop: (ungrouped) / one" in git(work, "log", "--format=%s")


def test_dirty_git_tree_is_refused_in_one_line_where_the_agent_works_in_it(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "README.md").write_text("edited by the user\n")
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout")
    assert done.returncode == 1
    assert "--allow-dirty" in done.stderr and done.stderr.count("\n") == 1
    assert "the agent works in this checkout," in done.stderr
    assert fake_claude.calls() == []
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--allow-dirty")
    assert done.returncode == 0, done.stderr
    assert git_commits(work)[0][2] == ["one.txt"]
    assert (work / "README.md").read_text() == "edited by the user\n"


@pytest.mark.parametrize("undo", ["git reset -q --hard", "git stash -q", "rm scratch.txt",
                                  "git clean -fdq -e one.txt"])
def test_checkout_run_says_which_uncommitted_file_a_task_took(
        work: Path, fake_claude: FakeClaude, undo: str) -> None:
    """--allow-dirty in your checkout: an agent that resets, stashes or deletes your
    uncommitted edit or file is said on its task's line, and the file is no part of the count
    of what the task's commit changed (it holds only one.txt)."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(f"- one\n  FAKE: write one.txt 1\n  FAKE: bash {undo}\n"
                                   "- two\n  FAKE: write two.txt 2\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    (work / "README.md").write_text("edited by the user\n")
    (work / "scratch.txt").write_text("notes\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--allow-dirty")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    gone = "scratch.txt (deleted)" if undo.startswith(("rm", "git clean")) \
        else "README.md (back as committed)"
    # Said on the task's line, and again among the closing lines: your work is gone.
    said = [line for line in out.splitlines() if "uncommitted there is gone" in line]
    assert len(said) == 2 and said[0].strip().startswith(f"task 1: {gone}"), out
    assert said[1] == f"look at: {said[0].strip()}", out
    assert "2 file(s) changed" not in out, out
    assert [files for _, _, files in git_commits(work)[:2]] == [["one.txt"], ["two.txt"]]


def test_jj_with_the_real_cli(work: Path, tmp_path: Path, jj_bin: str, fake_api: FakeApi,
                              claude_bin: Path) -> None:
    jj(work, "git", "init")
    (work / "tasks.md").write_text(REAL_TASKS)
    done = agent_loop(work, env=agent_loop_env(tmp_path, fake_api, claude_bin))
    assert done.returncode == 0, done.stderr
    changes = jj_changes(work)
    assert [f for _, _, f in changes] == [[name] for name in FILES]
    assert [d for _, d, _ in changes] == [
        "agent-loop: Backend / WRITE api.txt: api",
        "agent-loop: Backend / WRITE api_test.txt: test",
        "agent-loop: Docs / WRITE readme.txt: readme",
        "agent-loop: Docs / WRITE changelog.txt: changes"]
    jj(work, "abandon", changes[1][0])
    assert not (work / "api_test.txt").exists() and (work / "changelog.txt").exists()


def test_git_with_the_real_cli(work: Path, tmp_path: Path, fake_api: FakeApi,
                               claude_bin: Path) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(REAL_TASKS)
    done = agent_loop(work, "--vcs", "git", env=agent_loop_env(tmp_path, fake_api, claude_bin))
    assert done.returncode == 0, done.stderr
    commits = git_commits(work)
    assert [f for _, _, f in commits] == [[name] for name in FILES]
    git(work, "revert", "--no-edit", commits[1][0])
    assert not (work / "api_test.txt").exists() and (work / "changelog.txt").exists()
