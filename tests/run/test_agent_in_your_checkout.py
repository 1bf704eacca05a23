"""A lane's agent that `cd`s out of its lane into your checkout and runs git there: what it did is
said once as it is found, kept in the task's record, and said again in the run's closing lines
and in `--status`; a commit it makes on your branch (its `git commit -a` taking your uncommitted
edit) is told from yours by the mark its reflog entry carries, and stops the run with the one
line that repairs it. Real git, agent-loop as a process; the fake claude, and the real Claude
CLI acting through its Bash tool."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.run.test_serial_lane import CONFLICT_FIRST_LINE, CONFLICT_PLAN
from tests.support.claude_cli import claude_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi, ToolUse
from tests.support.repos import committed_plan, git, init_repo, state_of
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


def test_an_agents_rm_cached_in_your_checkout_is_said_once_and_not_kept(
        work: Path, fake_claude: FakeClaude) -> None:
    # A `git rm --cached` writes no reflog entry: the agent's or yours, time alone cannot tell
    # (you may be working beside the run), so it is said as found and kept in no record.
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN.format(hostile=f"git -C {work} rm -q --cached mine.txt"))
    (work / "mine.txt").write_text("my commit\n")
    git(work, "add", "tasks.md", "mine.txt")
    git(work, "commit", "-qm", "my work")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    see, undo = (f"git -C {work} diff --cached -- mine.txt", f"git -C {work} reset -q -- mine.txt")
    said = [line for line in done.stdout.splitlines() if "mine.txt (its deletion staged" in line]
    assert len(said) == 1, done.stdout
    assert f"`{see}`" in said[0] and f"`{undo}`" in said[0]
    assert not any(t.get("error") for t in state_of(work)["tasks"])
    assert "mine.txt" not in agent_loop(work, "--status").stdout
    # The commands do what they say.
    assert "deleted file mode" in git(work, *see.split()[3:])
    git(work, *undo.split()[3:])
    assert git(work, "status", "--porcelain", "--", "mine.txt") == ""


def test_your_own_edits_beside_the_run_are_said_as_found_never_kept(
        work: Path, fake_claude: FakeClaude) -> None:
    # You edit notes.md while each task runs (the agent's bash stands in for you here): said
    # once as found, not repeated under every task at the end nor in --status.
    init_repo(work, "git")
    (work / "notes.md").write_text("n\n")
    (work / "tasks.md").write_text(
        f"## B\n- [ ] b1\n  FAKE: write b1.txt b1\n  FAKE: bash echo more >> {work}/notes.md\n"
        f"- [ ] b2\n  FAKE: write b2.txt b2\n  FAKE: bash echo more >> {work}/notes.md\n")
    git(work, "add", "tasks.md", "notes.md")
    git(work, "commit", "-qm", "p")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "notes.md in" in line]
    assert len(said) == 2 and not any(line.startswith("look at:") for line in said), said
    assert not any(t.get("error") for t in state_of(work)["tasks"])
    assert "notes.md" not in agent_loop(work, "--status").stdout


def test_your_plan_renamed_while_the_run_works_is_no_file_changed(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    committed_plan(work, PLAN.format(hostile=f"mv {work}/tasks.md {work}/plan.md"))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert "renamed plan.md" in done.stdout, done.stdout + done.stderr
    assert "changed while this lane's agent ran" not in done.stdout + done.stderr


def test_what_the_agent_did_is_said_and_kept_when_its_landing_conflicts(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    # A commit of yours in the same lines as the task's, and the agent's plain `git reset` in
    # your checkout: the landing conflicts, and what the agent ran is said all the same, and
    # kept in the conflicted task's record.
    init_repo(work, "git")
    (work / "shared.txt").write_text("base\n")
    git(work, "add", "shared.txt")
    git(work, "commit", "-qm", "shared")
    plan = CONFLICT_PLAN.replace("git commit -qam yours", "git commit -qam yours && "
                                 "git -C {root} reset -q")
    (work / "tasks.md").write_text(plan.format(root=work))
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({CONFLICT_FIRST_LINE: ["FAKE: say I could not"]}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 4, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines()
            if f"an agent ran git in your checkout {work}" in line]
    assert said and "where it was" in said[0], done.stdout
    record = state_of(work)["tasks"][0]
    assert record["status"] == "conflicted"
    assert f"task 1: an agent ran git in your checkout {work}" in record["error"]
    assert "look at: task 1 is conflicted" in done.stdout and "where it was" in [
        line for line in done.stdout.splitlines() if line.startswith("look at: task 1 is")][0]


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


def test_a_task_that_only_ran_git_in_your_checkout_is_said_empty_and_what_it_did(
        work: Path, fake_claude: FakeClaude) -> None:
    # The note does not take the place of "changed no files" (as a submodule's note does, which
    # says where its files are): both are said, told apart by the record, not by their words.
    init_repo(work, "git")
    committed_plan(work, PLAN.format(hostile=f"git -C {work} reset -q")
                         .replace("  FAKE: write b1.txt b1\n", ""))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  completed, but the task changed no files (no change recorded)" in done.stdout
    assert f"look at: task 1: an agent ran git in your checkout {work}" in done.stdout, \
        done.stdout
    assert "look at: task 1 completed but changed no files" in done.stdout, done.stdout
    assert "note: task 1: an agent ran git in your checkout" in agent_loop(work, "--status").stdout


def test_an_agents_switch_of_your_checkout_is_kept_on_its_own_task_not_anothers(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    # --parallel 2: a1's agent switches your checkout to a branch of its own while b1's agent
    # works. The entry carried the run's mark, not a lane's, so b1's check (its step spans the
    # switch) said it too, and kept it in b1's record: blamed on the wrong task.
    b_began, a_switched = tmp_path / "b-began", tmp_path / "a-switched"
    wait = "for i in $(seq 400); do [ -e {0} ] && break; sleep 0.05; done"
    init_repo(work, "git")
    committed_plan(work,
        "## A\n- [ ] a1\n"
        f"  FAKE: bash {wait.format(b_began)}; git -C {work} switch -q -c agent-own; "
        f"touch {a_switched}\n"
        "  FAKE: write a1.txt a1\n"
        "## B\n- [ ] b1\n"
        f"  FAKE: bash touch {b_began}; {wait.format(a_switched)}\n"
        "  FAKE: write b1.txt b1\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    a1, b1 = state_of(work)["tasks"]
    assert "switched it from main to agent-own" in (a1.get("error") or ""), a1
    assert "switched it" not in (b1.get("error") or ""), b1
    said = [line for line in done.stdout.splitlines() if "switched it from main" in line]
    assert said and all(line.startswith(("[A]", "look at: task 1")) for line in said), said


def test_the_commands_said_of_odd_paths_written_in_your_checkout_work_as_pasted(
        work: Path, fake_claude: FakeClaude) -> None:
    # A name with a space and brackets: pasted, `git diff -- my notes [1].txt` is three
    # pathspecs, `[1]` a glob, and showed nothing; the staged one's reset unstaged nothing.
    import subprocess

    init_repo(work, "git")
    odd, staged = "my notes [1].txt", "s*t.txt"
    (work / odd).write_text("n\n")
    (work / staged).write_text("s\n")
    (work / "st.txt").write_text("yours, staged before the run\n")
    hostile = (f"echo agent >> '{work}/{odd}'; echo agent >> '{work}/{staged}'; "
               f"git -C '{work}' add -- '{staged}'")
    (work / "tasks.md").write_text(PLAN.format(hostile=hostile))
    git(work, "add", "tasks.md", odd, staged, "st.txt")
    git(work, "commit", "-qm", "p")
    (work / "st.txt").write_text("yours, staged\n")
    git(work, "add", "st.txt")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    said = next(line for line in done.stdout.splitlines() if "changed while this lane" in line)
    commands = [c for c in said.split("`") if c.startswith("git -C")]
    diff, cached, reset = (next(c for c in commands if k in c)
                           for k in (" diff -- ", " diff --cached ", " reset "))

    def pasted(command: str) -> str:
        ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
        assert ran.returncode == 0, (command, ran.stderr)
        return ran.stdout
    assert "+agent" in pasted(diff) and "notes [1]" in pasted(diff), diff
    shown = pasted(cached)
    assert "s*t.txt" in shown and "st.txt b/st.txt" not in shown, cached
    pasted(reset)
    assert git(work, "diff", "--cached", "--name-only").split() == ["st.txt"], reset
