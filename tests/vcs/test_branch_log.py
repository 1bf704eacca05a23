"""The history a run builds on, read by one git command started at once (agentloop.vcs.
branch_log.git_history): what a fresh run reads while it parses its plan."""

from __future__ import annotations

import os
from pathlib import Path
from shutil import which

import pytest

from agentloop import proc
from agentloop.vcs.branch_log import branch_history, git_history
from tests.support.repos import git, make_repo


def test_the_history_read_beside_is_branch_history_s(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work", "git")
    git(work, "commit", "-q", "--allow-empty", "-m", "agent-loop: One / first")
    git(work, "commit", "-q", "--allow-empty", "-m", "mine")
    read = git_history(work)
    found = read()
    assert [text.strip() for _, _, text in found] == ["agent-loop: One / first"]
    assert found == branch_history("git", work) == read()   # read twice: the same


def test_a_read_cut_short_answers_none_and_asks_git_nothing_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run that fails at its start stops the reads it started (proc.cut_reads) rather than
    # wait for them: git's exit then says nothing of the repository, which is not looked at
    # for damage (agentloop.vcs.git.pruned asks git again) as a failed read is.
    work = make_repo(tmp_path / "work", "git")
    git(work, "commit", "-q", "--allow-empty", "-m", "agent-loop: One / first")
    # A log as slow as a long history's: a real one of one commit can end before the cut
    # reaches it, and then answers the history (as it should), which is not what is tested.
    real = which("git")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\nsleep 60\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    before = proc.pending_reads()
    read = git_history(work)
    proc.cut_reads(proc.pending_reads() - before)
    started = proc.started()
    assert read() == []
    assert proc.started() == started, "a killed read was looked at as a damaged repository"
