"""With --sandbox, the repository's hooks that the `git-hooks` setting runs are confined like the
agent: they run code the agent may have written. Real bubblewrap, real git, the fake claude (put
where the sandbox lets it be seen: the private /tmp hides pytest's own temporary folders)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.sandbox.test_sandbox_real import needs_bwrap
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo

# A hook that reads the change as git hands it over (its own index), then tries to write where
# no code the agent wrote may.
PRE_COMMIT = """#!/bin/sh
echo "hook saw: $(git show :a.txt 2>/dev/null)$(git show :b.txt 2>/dev/null)"
git show :a.txt > "$(git rev-parse --git-dir)/hook-saw"
echo pwned > "$HOME/pwned.txt" 2>/dev/null
exit 0
"""


def hooked(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository with a pre-commit hook and a one-task plan, and the environment of a run
    whose home folder (with the fake claude and its records in it) is under `tmp_path`."""
    work = tmp_path / "work"
    work.mkdir(parents=True)
    (work / "README.md").write_text("hello\n")
    init_repo(work, "git")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt a\n")
    hook = work / ".git" / "hooks" / "pre-commit"
    hook.write_text(PRE_COMMIT)
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    home = tmp_path / "home"
    fake = FakeClaude(home / "fake")       # readable inside: the home folder is
    records = home / ".claude"             # writable inside: the agent's own home
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "AGENT_LOOP_CLAUDE": str(fake.bin),
           "FAKE_CLAUDE_STATE": str(records / "state"),
           "FAKE_CLAUDE_LOG": str(records / "calls.jsonl")}
    return work, env


def run(work: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill", "--git-hooks", *flags], cwd=work, env=env,
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


@needs_bwrap
def test_a_hook_cannot_write_the_home_folder_under_the_sandbox(tmp_path: Path) -> None:
    # Without the sandbox the hook writes where it likes: the test can tell.
    work, env = hooked(tmp_path / "open")
    done = run(work, env, "--no-sandbox")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (Path(env["HOME"]) / "pwned.txt").exists()

    # In your checkout, where the hook's git dir is the repository's own (a lane's hook is the
    # next test's).
    work, env = hooked(tmp_path / "boxed")
    done = run(work, env, "--sandbox", "--workplace", "checkout")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in done.stdout + done.stderr
    assert not (Path(env["HOME"]) / "pwned.txt").exists()
    # It still ran, on the task's change, and the task landed.
    assert (work / ".git" / "hook-saw").read_text() == "a\n"
    assert [files for _, _, files in git_commits(work)] == [["a.txt"]]
    assert git(work, "status", "--porcelain", "--", "a.txt") == ""


@needs_bwrap
def test_in_a_lane_the_hook_is_confined_and_still_reads_its_index(tmp_path: Path) -> None:
    work, env = hooked(tmp_path)
    (work / "tasks.md").write_text("## A\n- write a\n  FAKE: write a.txt a\n\n"
                                   "## B\n- write b\n  FAKE: write b.txt b\n")
    done = run(work, env, "--sandbox", "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (Path(env["HOME"]) / "pwned.txt").exists()
    assert sorted(files for _, _, files in git_commits(work)) == [["a.txt"], ["b.txt"]]
    # Each lane's hook read its own task's change (the check logs keep what it said).
    logs = "".join(p.read_text(errors="replace") for p in (work / ".agent-loop").rglob("*")
                   if p.is_file() and p.suffix == ".log")
    assert "hook saw: a\n" in logs and "hook saw: b\n" in logs
