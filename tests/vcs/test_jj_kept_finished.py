"""A finished agent's work a stop kept aside in jj (aside.keep_finished), found again by the
task's change it came from (aside.kept_finished) after a kill before the run recorded the
stop: only for that change, never another task's of the same title, and only once."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.jj.aside import bring_back, keep_aside, keep_finished, kept_finished
from agentloop.vcs.jj.run import Jj
from tests.support.repos import make_repo


def jj(repo: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", *args], cwd=repo).stdout.strip()


def change(repo: Path, name: str, text: str) -> str:
    """A new change on the base holding `name`, described as a task's (every one the same
    task title): its change id."""
    jj(repo, "new", "root()+", "-m", "agent-loop: All / the same title")
    (repo / name).write_text(text)
    return jj(repo, "log", "--no-graph", "-r", "@", "-T", "change_id")


@pytest.fixture
def repo(tmp_path: Path, jj_bin: str) -> Path:
    return make_repo(tmp_path / "repo", "jj", {"base.txt": "base\n"}, message="base")


def test_the_kept_work_comes_back_into_its_own_tasks_change_once(repo: Path) -> None:
    run = Jj(repo)
    mine, other = change(repo, "mine.txt", "mine\n"), change(repo, "other.txt", "other\n")
    line = keep_finished(run, mine, "agent-loop: All / the same title")
    assert line is not None
    assert kept_finished(run, other) is None  # another task's change: never its work
    assert kept_finished(run, mine) == line
    jj(repo, "new", "root()+", "-m", "agent-loop: All / the same title")  # the next attempt
    assert bring_back(run, line)
    assert (repo / "mine.txt").read_text() == "mine\n" and not (repo / "other.txt").exists()
    assert kept_finished(run, mine) is None  # brought back: nothing left to bring twice


def test_a_copy_made_before_the_tasks_change_was_emptied_is_dropped(repo: Path) -> None:
    # Killed between the copy and the emptying: the work is in both, the task's change is
    # kept aside as any killed attempt's, and the copy goes (one copy, brought back once).
    run = Jj(repo)
    mine = change(repo, "mine.txt", "mine\n")
    jj(repo, "new", "root()+")
    assert keep_aside(run, run.revs(mine)[0], mine, None, named=True) is not None
    assert kept_finished(run, mine) is None
    assert not jj(repo, "log", "--no-graph", "-r", 'description(substring:"rolled back")',
                  "-T", "change_id")
    assert jj(repo, "diff", "--name-only", "-r", mine) == "mine.txt"
