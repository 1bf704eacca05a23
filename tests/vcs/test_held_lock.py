"""agentloop.vcs.git.held_lock through the git door (agentloop.vcs.git.run), with real git and a
real process holding `.git/index.lock`: a checkout whose path has a space (`~/My Project`, as
many are) is waited for and said as any other."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloop.errors import VcsError
from agentloop.vcs.git.run import Git
from tests.support.repos import git, make_repo

# Holds `lock` open, as a running git does, for `seconds`; `ready` is made once it holds it.
HOLDER = """
import os, sys, time
lock, ready, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(lock, "x"):
    open(ready, "w").close()
    time.sleep(seconds)
    os.unlink(lock)
"""


@pytest.fixture
def spaced(tmp_path: Path) -> Path:
    """A repository of one commit at a path with a space, and a new file to add."""
    root = make_repo(tmp_path / "My Project", "git", {"README.md": "hello\n"})
    (root / "new.txt").write_text("new\n")
    return root


def hold(root: Path, seconds: float) -> subprocess.Popen[bytes]:
    ready = root.parent / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root / ".git" / "index.lock"),
                               str(ready), str(seconds)])
    while not ready.exists():
        assert holder.poll() is None
        time.sleep(0.01)
    return holder


def test_a_lock_held_a_moment_in_a_path_with_a_space_is_waited_for(spaced: Path) -> None:
    holder = hold(spaced, 0.5)
    try:
        Git(spaced).out("add", "new.txt")
    finally:
        holder.kill()
        holder.wait()
    assert git(spaced, "diff", "--cached", "--name-only").strip() == "new.txt"


def test_a_lock_left_in_a_path_with_a_space_is_said_in_one_line(spaced: Path) -> None:
    lock = spaced / ".git" / "index.lock"
    lock.touch()
    with pytest.raises(VcsError) as caught:
        Git(spaced).out("add", "new.txt")
    said = str(caught.value)
    assert f"{lock} is held by another git process" in said, said
    assert "\n" not in said, said



def test_a_lock_taken_again_and_again_is_tried_a_few_times_then_said(
        spaced: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A git of yours that takes the lock again each time it lets go (an editor's git panel
    # refreshing in a loop) is no moment's lock: the command is not run on and on.
    from agentloop import proc
    from agentloop.vcs.git import held_lock
    from agentloop.vcs.git.run import LOCK_TRIES

    (spaced / ".git" / "index.lock").touch()
    waits = []

    def went_and_came_back(error: str) -> bool:
        waits.append(error)
        assert len(waits) < 10, "the command was run again and again"
        return True
    monkeypatch.setattr(held_lock, "gone", went_and_came_back)
    before = proc.started()
    with pytest.raises(VcsError) as caught:
        Git(spaced).out("add", "new.txt")
    assert proc.started() - before == LOCK_TRIES == len(waits) + 1
    assert "is held by another git process" in str(caught.value)


# Your `git switch other`: it holds the lock while it puts HEAD on `other`, then lets it go.
SWITCHER = """
import os, subprocess, sys, time
lock, ready, root = sys.argv[1], sys.argv[2], sys.argv[3]
with open(lock, "x"):
    open(ready, "w").close()
    time.sleep(0.3)
    subprocess.run(["git", "-C", root, "symbolic-ref", "HEAD", "refs/heads/other"], check=True)
os.unlink(lock)
"""


def test_a_lock_whose_git_moved_head_meanwhile_is_said_in_one_line(spaced: Path) -> None:
    git(spaced, "branch", "other")
    lock = spaced / ".git" / "index.lock"
    ready = spaced.parent / "held"
    switcher = subprocess.Popen([sys.executable, "-c", SWITCHER, str(lock), str(ready),
                                 str(spaced)])
    try:
        while not ready.exists():
            assert switcher.poll() is None
            time.sleep(0.01)
        with pytest.raises(VcsError) as caught:
            Git(spaced).out("add", "new.txt")
    finally:
        switcher.kill()
        switcher.wait()
    said = str(caught.value)
    assert "\n" not in said and "Another git process" not in said, said
    assert f"{lock} was held by another git process of yours, which moved HEAD" in said, said
    assert "run agent-loop again" in said, said
    assert git(spaced, "diff", "--cached", "--name-only").strip() == "", "run again on `other`"
