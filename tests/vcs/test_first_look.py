"""A git run's first look at your checkout (agentloop.vcs.git.first_look): its `git rev-parse`
and `git status`, started with the run's early questions, are what the backend's locate() and
first status() take, without asking again, and only while nothing has changed the checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.git import first_look
from agentloop.vcs.git.record import OPEN_ATTEMPT
from agentloop.vcs.git.repo import GitRepo
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.status import ARGS, parse_status
from tests.support.repos import git, make_repo


def checkout(tmp_path: Path) -> Path:
    work = make_repo(tmp_path / "project", "git", plan="- one\n")
    (work / "mine.txt").write_text("uncommitted\n")
    return work.resolve()


def opened(work: Path) -> GitRepo:
    repo = GitRepo(Git(work))
    assert repo.locate()
    return repo


def test_the_backend_takes_the_first_look_without_asking_again(tmp_path: Path) -> None:
    work = checkout(tmp_path)
    settled = first_look.look(work)
    before = proc.started()
    repo = opened(work)
    status = repo.status()
    assert proc.started() == before, "asked git again"
    # The next look asks git: the first look stands for the first only.
    assert repo.status() == status
    assert proc.started() == before + 1
    assert status == parse_status(Git(work).out(*ARGS))
    assert "mine.txt" in status.paths
    settled()
    settled()  # waited for twice: the same, nothing left to reap


def test_a_killed_attempt_s_record_makes_the_first_status_be_asked_afresh(
        tmp_path: Path) -> None:
    # recover may put the attempt's files back before the first look: what the status said
    # before that is not what the checkout holds then.
    work = checkout(tmp_path)
    (work / ".git" / OPEN_ATTEMPT).write_text("{}")
    settled = first_look.look(work)
    before = proc.started()
    repo = opened(work)
    assert proc.started() == before, "where the repository is: taken from the first look"
    repo.status()
    assert proc.started() == before + 1
    settled()


def test_a_checkout_changed_after_the_look_is_looked_at_again(tmp_path: Path) -> None:
    work = checkout(tmp_path)
    settled = first_look.look(work)
    settled()  # both commands have ended: the files change after the look
    (work / "later.txt").write_text("after the look\n")
    first_look.forget_status(work)  # as preflight says when it finished a landing
    repo = opened(work)
    assert "later.txt" in repo.status().paths


def test_a_write_of_the_backend_before_its_first_status_drops_the_look(tmp_path: Path) -> None:
    work = checkout(tmp_path)
    settled = first_look.look(work)
    repo = opened(work)
    head = git(work, "rev-parse", "HEAD").strip()
    (work / "mine.txt").unlink()
    repo.reset_index(head, {"mine.txt"})  # any write: the look no longer stands
    before = proc.started()
    assert "mine.txt" not in repo.status().paths
    assert proc.started() == before + 1
    settled()


def test_another_folder_s_backend_asks_its_own(tmp_path: Path) -> None:
    work = checkout(tmp_path)
    (work / "sub").mkdir()
    settled = first_look.look(work)
    before = proc.started()
    sub = GitRepo(Git(work / "sub"))
    assert sub.locate()
    assert proc.started() == before + 1, "a look started for another folder was taken"
    settled()
    assert subprocess.run(["git", "-C", str(work), "status"], capture_output=True).returncode == 0


def test_no_look_where_git_cannot_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run goes on as without a look: the backend asks, and says what is wrong, in its turn.
    work = checkout(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing here"))
    settled = first_look.look(work)
    assert first_look.where(work) is None
    settled()


def test_a_run_refused_at_its_start_does_not_wait_for_the_first_look(tmp_path: Path) -> None:
    """The first look's `git status` (seconds on a large checkout) is stopped, not waited for,
    when the run ends before it needs it: here another run holds the lock."""
    import fcntl
    import os
    import sys
    import time

    work = checkout(tmp_path)
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(  # a status as slow as a huge checkout's
        f'#!/bin/sh\ncase " $* " in *" status "*) sleep 60 ;; esac\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    (work / ".agent-loop").mkdir(exist_ok=True)
    with open(work / ".agent-loop" / "run.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git"],
                              cwd=work, capture_output=True, text=True, timeout=50,
                              env={**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"})
        took = time.monotonic() - began
    assert done.returncode == 1, done.stderr
    assert "another agent-loop run holds" in done.stderr
    assert took < 40, f"waited {took:.0f} s for the status it did not need"
