"""Your checkout's `.git/index.lock` while tasks land: left there by an agent that ran `touch`
(or a git killed) in your checkout, or held by a git of yours. The branch gets each task's
commit; the checkout cannot follow while the lock is there. It is said in one line, the
checkout follows once the lock goes (a lock nobody holds, that appeared during the run, goes at
its end), and a checkout still behind at the end is said with the repair; the next run brings a
checkout left behind up to date, telling it from your own uncommitted edits, which stay. Real
git, agent-loop as a process, the fake claude."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo
from tests.support.runner import agent_loop

PLAN = """\
## A
- [ ] a1
  FAKE: bash {hostile}
  FAKE: write a1.txt A1
- [ ] a2
  FAKE: write a2.txt A2

## B
- [ ] b1
  FAKE: pause 1
  FAKE: write b1.txt B1
"""


def _yours(work: Path, hostile: str) -> None:
    """The plan and a commit of yours, then your uncommitted edits: one staged, one not."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN.format(hostile=hostile))
    (work / "mine.txt").write_text("my commit\n")
    (work / "staged.txt").write_text("my commit\n")
    git(work, "add", "tasks.md", "mine.txt", "staged.txt")
    git(work, "commit", "-qm", "my work")
    (work / "staged.txt").write_text("my staged edit\n")
    git(work, "add", "staged.txt")
    (work / "mine.txt").write_text("my precious uncommitted edit\n")


YOURS = {"M  staged.txt", " M mine.txt"}


def _status(work: Path) -> set[str]:
    return {line for line in git(work, "status", "--porcelain").splitlines()
            if ".agent-loop" not in line}


def _kept(work: Path) -> None:
    """Every task's file on disk as the branch has it, your edits as you left them."""
    assert _status(work) == YOURS, git(work, "status", "--porcelain")
    for name, text in (("a1.txt", "A1"), ("a2.txt", "A2"), ("b1.txt", "B1")):
        assert (work / name).read_text().strip() == text
    assert (work / "mine.txt").read_text() == "my precious uncommitted edit\n"
    assert git(work, "show", ":staged.txt") == "my staged edit\n"


def _landed_behind(work: Path, names: tuple[str, ...]) -> tuple[str, str, list[str]]:
    """Landings made as agent-loop makes them (a commit of each file on the branch, its reflog
    entry marked), with a checkout that never followed: (the commit it is at, the branch,
    the landed commits)."""
    base = git(work, "rev-parse", "HEAD").strip()
    branch = git(work, "symbolic-ref", "HEAD").strip()
    tips = []
    for name in names:
        (work / name).write_text(name + "\n")
        blob = git(work, "hash-object", "-w", name).strip()
        tree = subprocess.run(
            ["git", "mktree"], cwd=work, text=True, capture_output=True, check=True,
            input=git(work, "ls-tree", tips[-1] if tips else base)
            + f"100644 blob {blob}\t{name}\n").stdout
        new = git(work, "commit-tree", tree.strip(), "-p", tips[-1] if tips else base,
                  "-m", f"agent-loop: A / {name}").strip()
        git(work, "update-ref", "-m", f"agent-loop: landed {new[:12]}", branch, new)
        os.unlink(work / name)
        tips.append(new)
    return base, branch, tips


@pytest.mark.parametrize("parallel", ["1", "2"])
def test_an_agents_lock_on_your_index_is_said_and_the_checkout_follows(
        work: Path, fake_claude: FakeClaude, parallel: str) -> None:
    # Before: "done: 3 completed", rc 0, each task "could not follow (a file of a1.txt changed
    # meanwhile)", the lock left, and `git status` showing every task's file as a staged
    # deletion, none on disk: your next `git commit` took them off your branch.
    _yours(work, f"touch {work}/.git/index.lock")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", parallel)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    held = [line for line in out.splitlines() if ".git/index.lock is held" in line]
    assert len(held) == 1, out
    assert "could not follow" not in out and "changed while this lane's agent ran" not in out
    # A lock there is seen before a landing is left running beside the next agent: the landing
    # goes in turn, nothing of the next task is set aside and brought back.
    assert "did not land as itself" not in out and "set aside" not in out, out
    assert "appeared while agents ran and no process holds" in out
    assert not (work / ".git" / "index.lock").exists()
    assert not (work / ".git" / "agent-loop-landing").exists()
    _kept(work)
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0 and "uncommitted file(s)" in again.stdout, again.stdout
    assert "(e.g. mine.txt)" in again.stdout or "your 2 uncommitted" in again.stdout


def test_a_lock_your_git_holds_past_the_run_is_said_with_the_repair_and_the_next_run_follows(
        work: Path, fake_claude: FakeClaude) -> None:
    # A process outside the run holds the lock open from a moment after it appears (your
    # git, as far as anyone can tell; this test here): never removed, the run ends saying the
    # checkout is behind and how to bring it up to date; once it lets go, the next run does
    # that, your edits kept.
    lock = work / ".git" / "index.lock"
    _yours(work, f"touch {lock}")
    argv = [sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git", "--no-distill"]
    with subprocess.Popen(argv, cwd=work, env={**os.environ, "NO_COLOR": "1"}, text=True,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as run:
        for _ in range(600):
            if lock.exists() or run.poll() is not None:
                break
            time.sleep(0.05)
        with open(lock, "a"):  # held open until the run has ended
            out = run.communicate(timeout=180)[0]
            assert run.returncode == 0, out
            assert lock.exists(), out
    behind = [line for line in out.splitlines() if "is behind its branch" in line]
    assert len(behind) == 1, out
    assert f"rm {lock} && git -C {work} read-tree -m -u" in behind[0], behind
    assert "commit nothing before it follows" in behind[0]
    # As before the fix, the checkout lags: the tasks' files staged deletions.
    assert {"D  a1.txt", "D  a2.txt", "D  b1.txt"} <= _status(work)
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "removed" in again.stdout and "your checkout was behind its branch" in again.stdout
    _kept(work)


def test_a_checkout_an_older_run_left_behind_is_brought_up_to_date_your_edits_kept(
        work: Path) -> None:
    # What an earlier version left (no record of it): your branch has the tasks' commits, the
    # index and files are still at the commit before them, the lock gone. The next run tells
    # that from your edits (which were "your 2 uncommitted file(s)" alongside the tasks'
    # files as staged deletions) and follows.
    from agentloop.vcs.preflight import preflight

    _yours(work, "true")
    base, branch, tips = _landed_behind(work, ("a1.txt", "a2.txt"))
    assert {"D  a1.txt", "D  a2.txt"} <= _status(work)
    # Nothing wrote the index since (the lock that held the follow off was there until then).
    # (older than the landings' reflog entries, whose time is the committer date the tests set)
    past = int(git(work, "reflog", "-1", "--format=%ct", branch)) - 30
    os.utime(work / ".git" / "index", (past, past))
    notes = preflight("git", work, work / "tasks.md")
    assert any(f"it follows now ({tips[-1][:12]})" in n for n in notes), notes
    assert _status(work) == YOURS, git(work, "status", "--porcelain")
    assert (work / "a1.txt").read_text() == "a1.txt\n"
    assert (work / "mine.txt").read_text() == "my precious uncommitted edit\n"


def test_a_checkout_left_behind_is_found_after_your_git_status_rewrote_the_index(
        work: Path, fake_claude: FakeClaude) -> None:
    # The same, but once the lock was gone a `git status` of yours wrote the index again: the
    # run's first look finds the tasks' files staged, which sends it to look closer.
    _yours(work, "true")
    (work / "tasks.md").write_text("## A\n- [x] a1\n")
    git(work, "commit", "-qm", "plan", "--", "tasks.md")
    _, _, tips = _landed_behind(work, ("a1.txt",))
    tip = tips[-1]
    git(work, "status")
    assert "D  a1.txt" in _status(work) and not (work / "a1.txt").exists()
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"it follows now ({tip[:12]})" in done.stdout, done.stdout
    assert _status(work) == YOURS, git(work, "status", "--porcelain")
    assert (work / "a1.txt").read_text() == "a1.txt\n"


def test_your_own_staged_deletion_is_not_taken_for_a_checkout_behind(work: Path) -> None:
    # Your `git rm` of a file the last landing did not touch, index written since: yours.
    from agentloop.vcs.preflight import preflight

    _yours(work, "true")
    git(work, "rm", "-q", "tasks.md")
    notes = preflight("git", work, work / "tasks.md")
    assert not any("behind" in n for n in notes), notes
    assert "D  tasks.md" in _status(work)


def test_a_checkout_behind_with_your_file_in_the_way_is_said_and_your_file_kept(
        work: Path) -> None:
    # The record a landing kept while a lock held its follow off; meanwhile you wrote a file
    # of your own where the task's lands: the follow refuses, your file stays, and the line
    # says what to move and the command that follows then.
    from agentloop.vcs.git import behind
    from agentloop.vcs.preflight import preflight

    _yours(work, "true")
    base = git(work, "rev-parse", "HEAD").strip()
    (work / "a1.txt").write_text("A1\n")
    git(work, "add", "a1.txt")
    git(work, "commit", "-qm", "agent-loop: A / a1", "--", "a1.txt")  # yours stay staged
    tip = git(work, "rev-parse", "HEAD").strip()
    git(work, "rm", "-q", "--cached", "a1.txt")  # the index as the landing left it: at base
    (work / "a1.txt").write_text("my own a1\n")
    (work / ".git" / behind.RECORD).write_text(f"{base} {tip} {behind.BEHIND}\n")
    notes = preflight("git", work, work / "tasks.md")
    said = [n for n in notes if "is behind its branch" in n]
    assert len(said) == 1 and "move it away" in said[0], notes
    assert f"read-tree -m -u {base[:12]} {tip[:12]}" in said[0]
    assert (work / "a1.txt").read_text() == "my own a1\n"
    assert not (work / ".git" / behind.RECORD).exists()
