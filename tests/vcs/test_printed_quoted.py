"""Every git command a line prints runs as printed, pasted in a subfolder of the checkout: a
branch named `fix&go` or `it's`, and a checkout (so its lanes) whose path holds a space and a
quote, or a newline, are quoted for the shell, and a `cd` names its folder in full."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from agentloop.errors import VcsError
from agentloop.vcs.breach import LaneBreach
from agentloop.vcs.git import behind, lane_locks, teardown, worktrees
from agentloop.vcs.git.lane import LaneGit
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.git.record import Start
from agentloop.vcs.git.repo import GitRepo
from agentloop.vcs.git.run import Git
from agentloop.vcs.preflight import preflight
from tests.support.repos import agent_git, git, make_repo

BRANCHES = ["fix&go", "it's"]
# A folder whose name holds a newline (or a tab, an escape) is no git pathspec in a `cd`, an
# `rm` or a `git -C`: bash's $'...' says it on one line.
FOLDERS = ["my repo's", "my\nrepo", "tab\tand\x1b[31mesc"]
# Not "my\nrepo": git lanes in a checkout whose path holds a newline break before the line
# (the breach said without its way back, no lock seen, a failed finish): left alone here.
NO_NEWLINE = [FOLDERS[0], FOLDERS[2]]


def checkout(tmp_path: Path, branch: str, folder: str = "my repo's") -> Path:
    """A git repository at a path with a space and a quote (or `folder`), on `branch`, with a
    subfolder."""
    (tmp_path / folder / "src").mkdir(parents=True)
    root = make_repo(tmp_path / folder, "git", {"f.txt": "one\n", "src/lib.py": "\n"})
    git(root, "branch", "-m", "main", branch)
    return root


def pasted(root: Path, line: str, command: str) -> subprocess.CompletedProcess[str]:
    """The backquoted command of `line` that starts with `command`, run as a person pastes it
    in the checkout's subfolder src/."""
    found = re.search(rf"`({re.escape(command)}[^`]*)`", line)
    assert found is not None, line
    assert "\n" not in found.group(1), found.group(1)
    done = subprocess.run(["bash", "-c", found.group(1)], cwd=root / "src",
                          capture_output=True, text=True)
    assert done.returncode == 0, (found.group(1), done.stderr)
    return done


def on(root: Path) -> str:
    return git(root, "symbolic-ref", "--short", "HEAD").strip()


@pytest.mark.parametrize("branch", BRANCHES)
def test_the_switch_back_after_an_agent_switched_your_checkout(tmp_path: Path,
                                                               branch: str) -> None:
    root = checkout(tmp_path, branch)
    start = Start(head=git(root, "rev-parse", "HEAD").strip(), ref=f"refs/heads/{branch}",
                  index_tree="", states={})
    git(root, "switch", "-q", "-c", "other")
    with pytest.raises(VcsError) as caught:
        repo = GitRepo(Git(root))
        assert repo.locate()
        repo.refuse_rewound(start)
    pasted(root, str(caught.value), "git ")
    assert on(root) == branch


@pytest.mark.parametrize("branch,folder", [(b, "my repo's") for b in BRANCHES]
                         + [("main", FOLDERS[2])])
def test_the_switch_back_after_an_agent_ran_git_in_your_checkout_from_its_lane(
        tmp_path: Path, branch: str, folder: str) -> None:
    root = checkout(tmp_path, branch, folder)
    space = worktrees.open_git(root, "1-a", git(root, "rev-parse", branch).strip(), fresh=True)
    lane = LaneGit(space.path, space.path / "tasks.md", GitMainLine.current(root))
    lane.prepare()
    change = lane.begin("task 1")
    (space.path / "one.txt").write_text("one\n")
    agent_git(root, "checkout", "-q", "-b", "agentbranch")
    done = lane.finish(change, "task 1")
    switch = re.search(r"`(git -C [^`]* switch [^`]*)`", done.note or "")
    assert switch is not None, done.note
    pasted(root, switch.group(0), "git -C")
    assert on(root) == branch


@pytest.mark.parametrize("branch", BRANCHES)
def test_the_line_said_when_your_checkout_left_the_branch(tmp_path: Path, branch: str) -> None:
    root = checkout(tmp_path, branch)
    main = GitMainLine.current(root)
    said: list[str] = []
    main.on_wait = said.append
    git(root, "switch", "-q", "-c", "mine")
    worktrees.open_git(root, "1-a", git(root, "rev-parse", branch).strip(), fresh=True)
    lane = root / ".agent-loop"
    wt = next(p for p in lane.rglob("1-a") if (p / ".git").exists())
    (wt / "a.txt").write_text("a\n")
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", "task a")
    main.land(git(wt, "rev-parse", "HEAD").strip())
    assert len(said) == 1, said
    pasted(root, said[0], "git switch")
    assert on(root) == branch and (root / "a.txt").read_text() == "a\n"


@pytest.mark.parametrize("branch,folder", [(b, "my repo's") for b in (*BRANCHES, "main")]
                         + [("main", f) for f in FOLDERS[1:]])
def test_a_conflicted_lanes_look_and_rebase(tmp_path: Path, branch: str, folder: str) -> None:
    root = checkout(tmp_path, branch, folder)
    space = worktrees.open_git(root, "1-a", git(root, "rev-parse", branch).strip(), fresh=True)
    lane = LaneGit(space.path, space.path / "tasks.md", GitMainLine.current(root))
    (space.path / "a.txt").write_text("a\n")
    git(space.path, "add", "-A")
    git(space.path, "commit", "-qm", "the lane's task")
    (root / "b.txt").write_text("b\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "on the main line meanwhile")
    # The line names the lane as the run shows it, from the repository's top.
    line = lane.help_lines(space.path.relative_to(root).as_posix())
    assert "the lane's task" in pasted(root, line, "git log").stdout
    pasted(root, line, "cd ")
    assert (space.path / "b.txt").is_file()  # rebased onto the main line


@pytest.mark.parametrize("folder", NO_NEWLINE)
def test_the_unlock_of_a_lane_you_locked(tmp_path: Path, folder: str) -> None:
    root = checkout(tmp_path, "main", folder)
    space = worktrees.open_git(root, "1-a", git(root, "rev-parse", "HEAD").strip(), fresh=True)
    git(root, "worktree", "lock", "--reason", "mine", str(space.path))
    notes = teardown.remove_git(root, space, drop_branch=True)
    pasted(root, notes[0], "git worktree unlock")
    assert "locked" not in git(root, "worktree", "list", "--porcelain")


@pytest.mark.parametrize("branch", BRANCHES)
def test_the_look_at_a_kept_lane_branch(tmp_path: Path, branch: str) -> None:
    root = checkout(tmp_path, branch)
    git(root, "branch", "agent-loop/1-a")
    git(root, "switch", "-q", "agent-loop/1-a")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "not landed")
    git(root, "switch", "-q", branch)
    notes = teardown.drop_branches(root, {"1-a"}, main=branch)
    assert "not landed" in pasted(root, notes[0], "git log").stdout


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_repair_of_a_checkout_left_behind_its_branch(tmp_path: Path, folder: str) -> None:
    root = checkout(tmp_path, "main", folder)
    at = git(root, "rev-parse", "HEAD").strip()
    # The branch moved on (a landing), the checkout's index and files not: its lock was held.
    (root / "f.txt").write_text("two\n")
    git(root, "add", "f.txt")
    tree = git(root, "write-tree").strip()
    git(root, "reset", "-q", "--hard")
    tip = git(root, "commit-tree", tree, "-p", at, "-m", "landed").strip()
    git(root, "update-ref", "refs/heads/main", tip)
    (root / ".git" / behind.LOCK).write_text("")
    pasted(root, behind.repair(root, root / ".git", at, tip), "rm ")
    assert (root / "f.txt").read_text() == "two\n"
    assert not (root / ".git" / behind.LOCK).exists()


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_removal_of_a_lock_a_process_holds(tmp_path: Path, folder: str) -> None:
    root = checkout(tmp_path, "main", folder)
    lock = root / ".git" / "index.lock"
    with open(lock, "w"):  # held: the run stops, naming the command that removes it
        with pytest.raises(VcsError) as caught:
            preflight("git", root, root / "tasks.md")
    pasted(root, str(caught.value), "rm ")
    assert not lock.exists()


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_removal_of_a_lock_held_in_a_lane(tmp_path: Path, folder: str) -> None:
    root = checkout(tmp_path, "main", folder)
    space = worktrees.open_git(root, "1-a", git(root, "rev-parse", "HEAD").strip(), fresh=True)
    own = Path(git(space.path, "rev-parse", "--absolute-git-dir").strip())
    lock = own / "index.lock"
    with open(lock, "w"):
        with pytest.raises(VcsError) as caught:
            lane_locks.cleared(space.path, own)
    pasted(root, str(caught.value), "rm ")
    assert not lock.exists()


@pytest.mark.parametrize("folder", NO_NEWLINE)
def test_the_way_back_to_a_finished_agents_work_in_a_lane_it_damaged(tmp_path: Path,
                                                                     folder: str) -> None:
    root = checkout(tmp_path, "main", folder)
    space = worktrees.open_git(root, "1-a", git(root, "rev-parse", "HEAD").strip(), fresh=True)
    lane = LaneGit(space.path, space.path / "tasks.md", GitMainLine.current(root))
    lane.prepare()
    change = lane.begin("task 1")
    (space.path / "one.txt").write_text("one\n")
    (space.path / ".git").unlink()  # the agent's `rm .git`, its work done
    with pytest.raises(LaneBreach) as caught:
        lane.diff(change)
    way_back = re.search(r"`[^`]*\| git [^`]*`", caught.value.breach.line)
    assert way_back is not None, caught.value.breach.line
    pasted(root, way_back.group(0), "git ")
    assert (root / "one.txt").read_text() == "one\n"
