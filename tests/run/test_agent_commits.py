"""An agent that commits in its working copy (`git commit`, `--amend`, several commits): its
commits belong to the task that was running, folded into that task's one commit on the main
line, also across a kill of agent-loop and a re-run that resumes the group's session."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloop.run.attempt import KEPT_NOTE
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, jj_changes, state_of
from tests.support.runner import agent_loop

COMMITS = ("\n  FAKE: write a.txt a\n  FAKE: bash git add -A && git commit -qm wip"
           "\n  FAKE: write b.txt b\n  FAKE: bash git add -A && git commit -qm 'wip 2'"
           "\n  FAKE: write a.txt a2\n  FAKE: bash git add -A && git commit -q --amend -m amended")


# Where the agents work: your checkout one group at a time, a lane of its own one group at a
# time (`--workplace lane`), or two lanes at once.
WHERE = {"checkout": ("--parallel", "1"), "one-lane": ("--parallel", "1", "--workplace", "lane"),
         "lanes": ("--parallel", "2")}


def two_groups(first: str) -> str:
    """Group 1: a task whose agent commits, then one that does not; group 2: one task."""
    return ("## Group 1\n"
            f"- task 1.1\n  FAKE: write g1t1.txt 1.1{first}\n"
            "- task 1.2\n  FAKE: write g1t2.txt 1.2\n\n"
            "## Group 2\n"
            "- task 2.1\n  FAKE: write g2t1.txt 2.1\n")


def unreachable_commits(work: Path) -> list[str]:
    """Commits that nothing but a reflog holds: work that a `git gc` would one day drop."""
    out = git(work, "fsck", "--unreachable", "--no-reflogs", "--no-progress")
    return [line.split()[2] for line in out.splitlines() if line.startswith("unreachable commit")]


def files_of(work: Path, sha: str) -> list[str]:
    return sorted(git(work, "show", "--name-only", "--format=", sha).split())


def assert_folded(work: Path) -> None:
    """Each task once on main, the agent's commits inside task 1.1's, none of their own."""
    subjects = git(work, "log", "--format=%s", "main").splitlines()
    assert not [s for s in subjects if s.startswith(("wip", "amended"))], subjects
    commits = {subject: files for _, subject, files in git_commits(work)}
    assert sorted(commits) == ["agent-loop: Group 1 / task 1.1", "agent-loop: Group 1 / task 1.2",
                               "agent-loop: Group 2 / task 2.1"]
    assert sorted(commits["agent-loop: Group 1 / task 1.1"]) == ["a.txt", "b.txt", "g1t1.txt"]
    assert commits["agent-loop: Group 1 / task 1.2"] == ["g1t2.txt"]
    assert commits["agent-loop: Group 2 / task 2.1"] == ["g2t1.txt"]
    assert (work / "a.txt").read_text() == "a2\n"
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    by_task = {t["index"]: t for t in state["tasks"]}
    assert sorted(by_task[1]["files"]) == ["a.txt", "b.txt", "g1t1.txt"]
    sha = by_task[1]["change_id"]
    body = git(work, "show", "-s", "--format=%B", sha)
    assert "Includes the commits the agent made itself" in body
    assert "Agent-Loop-Task:" in body or "Task:" in body, body
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""


@pytest.mark.parametrize("where", WHERE)
def test_agent_commits_fold_into_the_task(work: Path, fake_claude: FakeClaude,
                                          where: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(two_groups(COMMITS))
    done = agent_loop(work, "--vcs", "git", *WHERE[where], "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed no files" not in done.stdout
    assert_folded(work)
    # Reverting task 1.1 takes exactly its files, the agent's commits with them.
    task1 = state_of(work)["tasks"][0]["change_id"]
    git(work, "revert", "--no-edit", task1)
    assert not (work / "a.txt").exists() and not (work / "b.txt").exists()
    assert (work / "g1t2.txt").exists()


def work_lost(work: Path) -> list[str]:
    """What an unreachable commit holds that the main line's tip does not: `sha:path` for every
    file such a commit changed to a content neither the main line nor the checkout has (the
    plan, untracked, which an agent's `git add -A` took, is never committed by agent-loop)."""
    lost = []
    for sha in unreachable_commits(work):
        parents = git(work, "rev-list", "--parents", "-n", "1", sha).split()[1:]
        base = parents[0] if parents else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        for path in git(work, "diff", "--name-only", "--no-renames", base, sha).split():
            if path.startswith(".agent-loop/"):
                continue
            mine = subprocess.run(["git", "rev-parse", f"{sha}:{path}"], cwd=work,
                                  capture_output=True, text=True).stdout.strip()
            there = subprocess.run(["git", "rev-parse", f"main:{path}"], cwd=work,
                                   capture_output=True, text=True).stdout.strip()
            here = subprocess.run(["git", "hash-object", path], cwd=work,
                                  capture_output=True, text=True).stdout.strip()
            if mine and mine not in (there, here):
                lost.append(f"{sha[:12]}:{path}")
    return lost


def committing_then_killed(flags: Path) -> str:
    """An agent that commits twice (amending the second), leaves a file uncommitted, and is then
    killed with agent-loop; run again, it finds its work there and changes nothing further."""
    return (f"\n  FAKE: bash [ -e a.txt ] || {{ echo a > a.txt && git add -A && git commit -qm wip"
            " && echo b > b.txt && git add -A && git commit -qm 'wip 2'"
            " && git commit -q --amend -m amended && echo c > c.txt"
            f" && echo once >> {flags}/work && echo $PPID $$ > {flags}/pids.tmp"
            f" && mv {flags}/pids.tmp {flags}/pids && exec sleep 60; }}")


def start(work: Path, where: str, kind: str = "git") -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", kind,
                             *WHERE[where], "--no-distill"], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def killed_when_flagged(child: subprocess.Popen[bytes], flags: Path) -> None:
    """The run `child` killed (SIGKILL) once its agent wrote `flags/pids` (it has committed and
    goes on working), and that agent with it (gone with its process group, mostly)."""
    deadline = time.monotonic() + 60
    while not (flags / "pids").exists():
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    for pid in (flags / "pids").read_text().split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


@pytest.mark.parametrize("where", WHERE)
def test_agent_commits_survive_a_kill_and_fold_into_the_task(work: Path, tmp_path: Path,
                                                             fake_claude: FakeClaude,
                                                             where: str) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    init_repo(work, "git")
    (work / "tasks.md").write_text(two_groups(committing_then_killed(flags)))
    child = start(work, where)
    killed_when_flagged(child, flags)
    done = agent_loop(work, "--vcs", "git", *WHERE[where], "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed no files" not in done.stdout, done.stdout
    # The work was done once, and counts: the task is not paid twice, and the agent run again
    # is told that its work is there (not that it was discarded).
    assert (flags / "work").read_text() == "once\n"
    again = [p for p in fake_claude.prompts() if "task 1.1" in p][-1]
    assert again.startswith(KEPT_NOTE), again
    subjects = git(work, "log", "--format=%s", "main").splitlines()
    assert not [s for s in subjects if s.startswith(("wip", "amended"))], subjects
    commits = {subject: files for _, subject, files in git_commits(work)}
    assert sorted(commits["agent-loop: Group 1 / task 1.1"]) == ["a.txt", "b.txt", "c.txt",
                                                                 "g1t1.txt"]
    assert commits["agent-loop: Group 1 / task 1.2"] == ["g1t2.txt"]
    assert commits["agent-loop: Group 2 / task 2.1"] == ["g2t1.txt"]
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert work_lost(work) == []


JJ_COMMITS = ("\n  FAKE: write a.txt a\n  FAKE: bash jj commit -m wip"
              "\n  FAKE: write b.txt b\n  FAKE: bash jj new\n  FAKE: write c.txt c")


@pytest.mark.parametrize("where", ["checkout", "lanes"])
def test_agent_jj_commits_fold_into_the_task(work: Path, jj_bin: str, fake_claude: FakeClaude,
                                             where: str) -> None:
    init_repo(work, "jj")
    (work / "tasks.md").write_text(two_groups(JJ_COMMITS))
    done = agent_loop(work, "--vcs", "jj", *WHERE[where], "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    changes = {d: sorted(files) for _, d, files in jj_changes(work)}
    assert changes == {"agent-loop: Group 1 / task 1.1": ["a.txt", "b.txt", "c.txt", "g1t1.txt"],
                       "agent-loop: Group 1 / task 1.2": ["g1t2.txt"],
                       "agent-loop: Group 2 / task 2.1": ["g2t1.txt"]}
    described = jj(work, "log", "--no-graph", "-r", "::@", "-T",
                   'description.first_line() ++ "\\n"')
    assert "wip" not in described.split("\n")
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}


def jj_committing_then_killed(flags: Path) -> str:
    """As committing_then_killed, with `jj commit` and `jj new`."""
    return (f"\n  FAKE: bash [ -e a.txt ] || {{ echo a > a.txt && jj commit -m wip"
            " && echo b > b.txt && jj new && echo c > c.txt && jj status > /dev/null"
            f" && echo once >> {flags}/work && echo $PPID $$ > {flags}/pids.tmp"
            f" && mv {flags}/pids.tmp {flags}/pids && exec sleep 60; }}")


@pytest.mark.parametrize("where", ["checkout", "lanes"])
def test_agent_jj_commits_survive_a_kill_and_fold_into_the_task(work: Path, tmp_path: Path,
                                                                jj_bin: str,
                                                                fake_claude: FakeClaude,
                                                                where: str) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    init_repo(work, "jj")
    (work / "tasks.md").write_text(two_groups(jj_committing_then_killed(flags)))
    child = start(work, where, "jj")
    killed_when_flagged(child, flags)
    done = agent_loop(work, "--vcs", "jj", *WHERE[where], "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed no files" not in done.stdout, done.stdout
    changes = {d: sorted(files) for _, d, files in jj_changes(work)}
    assert changes == {"agent-loop: Group 1 / task 1.1": ["a.txt", "b.txt", "c.txt", "g1t1.txt"],
                       "agent-loop: Group 1 / task 1.2": ["g1t2.txt"],
                       "agent-loop: Group 2 / task 2.1": ["g2t1.txt"]}
    assert (flags / "work").read_text() == "once\n"
    again = [p for p in fake_claude.prompts() if "task 1.1" in p][-1]
    assert again.startswith(KEPT_NOTE), again
