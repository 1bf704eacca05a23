"""A lane's agent that `cd`s out of its lane into your checkout and runs git there: what it did is
said once as it is found, kept in the task's record, and said again in the run's closing lines
and in `--status`; a commit it makes on your branch (its `git commit -a` taking your uncommitted
edit) is told from yours by the mark its reflog entry carries, and stops the run with the one
line that repairs it. Real git, agent-loop as a process; the fake claude, and the real Claude
CLI acting through its Bash tool."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.claude_cli import claude_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi, ToolUse
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop

PLAN = """\
## B
- [ ] b1
  FAKE: write b1.txt b1
  FAKE: bash {hostile}
- [ ] b2
  FAKE: write b2.txt b2
"""


def _yours(work: Path, plan: str) -> str:
    """The plan and a commit of yours, then an uncommitted edit of yours; your branch's tip."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan)
    (work / "mine.txt").write_text("my commit\n")
    git(work, "add", "tasks.md", "mine.txt")
    git(work, "commit", "-qm", "my work")
    (work / "mine.txt").write_text("my precious uncommitted edit\n")
    return git(work, "rev-parse", "main").strip()


def test_an_agents_rm_cached_in_your_checkout_is_said_again_at_the_end_and_in_status(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN.format(hostile=f"git -C {work} rm -q --cached mine.txt"))
    (work / "mine.txt").write_text("my commit\n")
    git(work, "add", "tasks.md", "mine.txt")
    git(work, "commit", "-qm", "my work")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    see, undo = (f"git -C {work} diff --cached -- mine.txt", f"git -C {work} reset -q -- mine.txt")
    said = [line for line in done.stdout.splitlines() if "mine.txt (its deletion staged" in line]
    # Once as it was found, once more in the closing lines.
    assert len(said) == 2, done.stdout
    assert said[0].startswith("  task 1: ") and said[1].startswith("look at: task 1: ")
    assert all(f"`{see}`" in line and f"`{undo}`" in line for line in said)
    # The task's record keeps it (the ledger writes it as the task's note) ...
    record = state_of(work)["tasks"][0]
    assert record["status"] == "completed" and "mine.txt (its deletion staged" in record["error"]
    # ... and --status says it under the task.
    status = agent_loop(work, "--status").stdout
    assert "note: task 1: mine.txt (its deletion staged" in status and f"`{undo}`" in status
    # The commands do what they say.
    assert "deleted file mode" in git(work, *see.split()[3:])
    git(work, *undo.split()[3:])
    assert git(work, "status", "--porcelain", "--", "mine.txt") == ""


def _stopped_on_the_agents_commit(work: Path, done_stdout: str, done_stderr: str,
                                  mine: str) -> None:
    said = done_stdout + done_stderr
    sneaked = git(work, "rev-parse", "main").strip()
    assert sneaked != mine and git(work, "rev-parse", "main~1").strip() == mine, said
    # Nothing of the run landed on the branch the agent moved.
    assert git(work, "log", "--format=%s", "-1").strip() == "agent sneaks in"
    [line] = [s for s in done_stderr.splitlines() if "an agent ran git in your checkout" in s]
    assert f"moved your branch main from {mine[:12]} to {sneaked[:12]}" in line
    assert "(mine.txt)" in line and f"`git -C {work} reset --soft {mine[:12]}`" in line
    record = state_of(work)["tasks"][0]
    assert record["status"] == "interrupted" and record["attempts"] == 0
    assert f"reset --soft {mine[:12]}" in record["error"]
    assert f"reset --soft {mine[:12]}" in agent_loop(work, "--status").stdout
    # The repair gives your edit back, uncommitted.
    git(work, "reset", "-q", "--soft", mine[:12])
    assert git(work, "rev-parse", "main").strip() == mine
    assert (work / "mine.txt").read_text() == "my precious uncommitted edit\n"
    assert git(work, "status", "--porcelain", "--", "mine.txt").strip() == "M  mine.txt"


def test_an_agents_commit_a_in_your_checkout_stops_the_run_with_the_repair(
        work: Path, fake_claude: FakeClaude) -> None:
    mine = _yours(work, PLAN.format(hostile="git -C {work} commit -qam 'agent sneaks in'")
                  .replace("{work}", str(work)))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 1, done.stdout + done.stderr
    _stopped_on_the_agents_commit(work, done.stdout, done.stderr, mine)


def test_your_commit_beside_a_run_started_from_an_agents_shell_stays_yours(
        work: Path, fake_claude: FakeClaude) -> None:
    """agent-loop started from a shell that has an agent's reflog mark already (by an agent of
    another run, or by you with such an agent's environment copied): your own commit in your
    checkout while task 1's agent works, from that shell, carries that mark. It was taken for
    the agent's: the run stopped there, task 1 paid for and dropped."""
    outer = "agent-loop agent"
    mine = _yours(work, PLAN.format(
        hostile=f"cd {work} && GIT_REFLOG_ACTION='{outer}' git commit -qam 'my own commit'"))
    done = agent_loop(work, "--vcs", "git", "--no-distill",
                      env={**os.environ, "GIT_REFLOG_ACTION": outer})
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "an agent ran git in your checkout" not in said, said
    # Your commit, with the mark it was made with, and the two tasks landed on top of it.
    assert f"{outer}: my own commit" in git(work, "reflog", "--format=%gs", "main")
    assert git(work, "log", "--format=%s", f"{mine}..main").splitlines() == [
        "agent-loop: B / b2", "agent-loop: B / b1", "my own commit"], said
    assert git(work, "show", "main~2:mine.txt") == "my precious uncommitted edit\n"
    record = state_of(work)["tasks"]
    assert [(t["status"], t["attempts"]) for t in record] == [("completed", 1)] * 2, record


def test_the_real_clis_bash_commit_in_your_checkout_stops_the_run(
        work: Path, fake_api: FakeApi, claude_bin: Path, tmp_path: Path) -> None:
    # The real CLI hands the environment agent-loop gives it (GIT_REFLOG_ACTION among it) to
    # the commands its Bash tool runs: the commit's reflog entry carries the agent's mark.
    mine = _yours(work, "## B\n- [ ] b1\n- [ ] b2\n")
    env = {**claude_env(tmp_path / "home", fake_api), "AGENT_LOOP_CLAUDE": str(claude_bin)}
    fake_api.script(ToolUse("Bash", {"command": f"git -C {work} commit -qam 'agent sneaks in'",
                                     "description": "commit"}), model="opus")
    done = agent_loop(work, "--vcs", "git", "--no-distill", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    _stopped_on_the_agents_commit(work, done.stdout, done.stderr, mine)


def test_a_task_that_only_deleted_your_file_is_said_empty_and_what_it_did(
        work: Path, fake_claude: FakeClaude) -> None:
    # The note does not take the place of "changed no files" (as a submodule's note does, which
    # says where its files are): both are said.
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN.format(hostile=f"rm {work}/scratch.txt")
                                   .replace("  FAKE: write b1.txt b1\n", ""))
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "the plan")
    (work / "scratch.txt").write_text("my notes\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  completed, but the task changed no files (no change recorded)" in done.stdout
    assert "look at: task 1: scratch.txt (deleted) in" in done.stdout, done.stdout
    assert "look at: task 1 completed but changed no files" in done.stdout, done.stdout
    assert "note: task 1: scratch.txt (deleted)" in agent_loop(work, "--status").stdout
