"""A command a stop prints is typed as printed: a checkout (or a lane inside it) whose path
holds a space or a quote still gets a command the shell runs in that checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentloop.vcs.git.in_the_way import restore, unmerged
from agentloop.vcs.git.run import Git
from tests.support.repos import git, init_repo


@pytest.mark.parametrize("folder", ["my repo", "it's here", "plain"])
def test_the_restore_of_files_a_stash_pop_left_unmerged_runs_as_printed(
        tmp_path: Path, folder: str) -> None:
    root = tmp_path / folder
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    init_repo(root, "git")
    (root / "README.md").write_text("stashed\n")
    git(root, "stash", "-q")
    (root / "README.md").write_text("committed\n")
    git(root, "commit", "-qam", "change")
    subprocess.run(["git", "stash", "pop"], cwd=root, capture_output=True)
    assert unmerged(Git(root)) == ["README.md"]

    command = restore(root, ["README.md"])
    done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True)

    assert done.returncode == 0, (command, done.stderr)
    assert unmerged(Git(root)) == []
    assert (root / "README.md").read_text() == "committed\n"
