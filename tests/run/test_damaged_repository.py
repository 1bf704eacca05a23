"""A repository whose own git objects are gone (a `git gc --prune=now` beside a parallel run
pruned a commit a landing had just put on your branch; a disk that lost files): every way in —
a run, `--parallel`, `--status`, a run that resumes a killed one — says so in one line naming
`git fsck`, exits 1, starts no agent and leaves the run's state as it was. git's own words
("fatal: bad object HEAD") are no help: nothing agent-loop does mends it."""

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
from tests.support.repos import git, jj
from tests.support.runner import agent_loop

FIRST = "- task one\n  FAKE: write one.txt one\n"
MORE = "- task two\n  FAKE: write two.txt two\n- task three\n  FAKE: write three.txt three\n"


def said_damaged(done, kind: str = "git") -> None:  # type: ignore[no-untyped-def]
    """The one line of a damaged repository: exit 1, no traceback, `git fsck` named."""
    err = done.stderr
    assert done.returncode == 1, (done.returncode, done.stdout, err)
    assert "Traceback" not in err + done.stdout, err
    lines = [line for line in err.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("agent-loop: error: "), err
    assert "damaged" in err and "git fsck" in err, err
    assert "fatal:" not in err, err


def remove_object(work: Path, sha: str) -> None:
    """Delete commit `sha`'s loose object, as a prune does."""
    loose = Path(git(work, "rev-parse", "--git-common-dir").strip())
    loose = (loose if loose.is_absolute() else work / loose) / "objects" / sha[:2] / sha[2:]
    assert loose.exists(), loose
    loose.unlink()


@pytest.fixture
def ran(work: Path, fake_claude: FakeClaude) -> Path:
    """A git repository where one run finished task one, two tasks added and committed since."""
    git(work, "init", "-q")
    (work / ".gitignore").write_text(".agent-loop/\n")
    (work / "tasks.md").write_text(FIRST)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "initial")
    first = agent_loop(work)
    assert first.returncode == 0, first.stderr
    (work / "tasks.md").write_text(FIRST + MORE)
    git(work, "commit", "-qam", "more tasks")
    return work


def unchanged(work: Path, fake_claude: FakeClaude, args: tuple[str, ...]) -> None:
    """agent-loop ARGS on the damaged repository: the one line, nothing run, nothing lost."""
    state = (work / ".agent-loop" / "state.json").read_bytes()
    calls = len(fake_claude.calls())
    for _ in range(2):  # and the same again: nothing the first refusal did changes that
        said_damaged(agent_loop(work, *args))
    assert len(fake_claude.calls()) == calls
    assert (work / ".agent-loop" / "state.json").read_bytes() == state


@pytest.mark.parametrize("args", [(), ("--parallel", "3"), ("--status",), ("--dry-run",)],
                         ids=["run", "parallel", "status", "dry-run"])
@pytest.mark.parametrize("damage", ["head's commit pruned", "branch names a missing commit"])
def test_a_repository_missing_its_head_commit_is_said_in_one_line(
        ran: Path, fake_claude: FakeClaude, args: tuple[str, ...], damage: str) -> None:
    if damage == "head's commit pruned":
        remove_object(ran, git(ran, "rev-parse", "HEAD").strip())
    else:
        (ran / ".git" / "refs" / "heads" / "main").write_text("ab" * 20 + "\n")
    unchanged(ran, fake_claude, args)


def killed_halfway(work: Path, directives: Path, args: tuple[str, ...]) -> None:
    """`agent-loop tasks.md ARGS` killed (SIGKILL, its whole process group) while task two's
    agent, having written half.txt where it works, dawdles."""
    directives.write_text(json.dumps({"task two": ["FAKE: write half.txt half",
                                                   "FAKE: pause 60"]}))
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(directives)},
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
            (work / "half.txt").exists() or any(work.glob(".agent-loop/lanes/*/half.txt"))):
        time.sleep(0.02)
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=30)
    assert (work / "half.txt").exists() or any(work.glob(".agent-loop/lanes/*/half.txt"))


@pytest.mark.parametrize("args", [(), ("--parallel", "3"), ("--workplace", "checkout")],
                         ids=["run", "parallel", "checkout"])
def test_a_killed_run_resumed_in_a_damaged_repository_is_said_in_one_line(
        ran: Path, fake_claude: FakeClaude, tmp_path: Path, args: tuple[str, ...]) -> None:
    killed_halfway(ran, tmp_path / "directives.json", args)
    remove_object(ran, git(ran, "rev-parse", "HEAD").strip())
    unchanged(ran, fake_claude, args)
    unchanged(ran, fake_claude, ("--status",))


def test_status_right_after_the_run_whose_landed_commit_was_pruned(
        work: Path, fake_claude: FakeClaude) -> None:
    # The run's last look at the history stands at the commit that is gone: --status, which
    # trusts that look and asks git nothing, must still see the commit is missing.
    git(work, "init", "-q")
    (work / ".gitignore").write_text(".agent-loop/\n")
    (work / "tasks.md").write_text(FIRST)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "initial")
    assert agent_loop(work).returncode == 0
    remove_object(work, git(work, "rev-parse", "HEAD").strip())
    unchanged(work, fake_claude, ("--status",))
    unchanged(work, fake_claude, ())


def test_a_jj_repository_whose_git_head_commit_is_gone_is_said_in_one_line(
        work: Path, fake_claude: FakeClaude) -> None:
    jj(work, "git", "init")
    (work / "tasks.md").write_text(FIRST)
    assert agent_loop(work).returncode == 0
    (work / "tasks.md").write_text(FIRST + MORE)
    remove_object(work, git(work, "rev-parse", "HEAD").strip())
    for args in ((), ("--parallel", "3"), ("--status",), ("--dry-run",)):
        unchanged(work, fake_claude, args)


# An agent that commits in its lane, then deletes that commit's objects (as a disk that lost
# files leaves them: a `git gc --prune=now` in the lane keeps what its branch names): the lane's
# branch is there, its commit is not.
PRUNE_OWN = ("- task one\n  FAKE: bash printf 'new\\n' > new.txt && git add new.txt && "
             "git commit -qm mine && o=$(git rev-parse --git-common-dir)/objects && "
             "for t in $(git rev-parse HEAD HEAD^{tree} HEAD:new.txt); do "
             "rm -f \"$o/${t:0:2}/${t:2}\"; done\n")


@pytest.mark.parametrize("args", [(), ("--parallel", "3")], ids=["run", "parallel"])
def test_a_lane_commit_pruned_under_its_branch_is_said_as_missing_objects(
        work: Path, fake_claude: FakeClaude, args: tuple[str, ...]) -> None:
    """Not "the agent deleted its lane's branch" (the branch is there): its objects are
    missing, said in one line naming `git fsck`; nothing lands."""
    git(work, "init", "-q")
    (work / ".gitignore").write_text(".agent-loop/\n")
    (work / "tasks.md").write_text(PRUNE_OWN)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "initial")
    head = git(work, "rev-parse", "HEAD")
    done = agent_loop(work, *args)
    err = done.stderr
    assert done.returncode == 1, (done.stdout, err)
    assert "Traceback" not in err + done.stdout, err
    assert "damaged" in err and "git fsck" in err and "deleted" not in err, err
    assert "fatal:" not in err + done.stdout, err
    assert git(work, "rev-parse", "HEAD") == head


# An agent that deletes the object of a file it left as it was (as a prune of a damaged or
# pruned repository leaves it): the landing's `git write-tree` finds it missing.
PRUNE_KEPT = ("- task one\n  FAKE: bash printf 'new\\n' > new.txt && "
              "o=$(git rev-parse --git-common-dir)/objects && t=$(git rev-parse HEAD:README.md) && "
              "rm -f \"$o/${t:0:2}/${t:2}\"\n")


@pytest.mark.parametrize("args", [(), ("--parallel", "3")], ids=["run", "parallel"])
def test_a_lanes_git_failing_on_missing_objects_is_said_in_our_words(
        work: Path, fake_claude: FakeClaude, args: tuple[str, ...]) -> None:
    """git's own words ("invalid object ... error building trees") are not what the user reads:
    one line that says objects are missing, naming `git gc` and `git fsck`."""
    git(work, "init", "-q")
    (work / ".gitignore").write_text(".agent-loop/\n")
    (work / "tasks.md").write_text(PRUNE_KEPT)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "initial")
    done = agent_loop(work, *args)
    err = done.stderr
    assert done.returncode == 1, (done.stdout, err)
    assert "Traceback" not in err + done.stdout, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "objects it needs are missing" in lines[0], err
    assert "git gc" in err and "git fsck" in err, err
    for words in ("fatal:", "error building trees", "invalid object"):
        assert words not in err + done.stdout, err
