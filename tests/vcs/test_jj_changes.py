"""jj's change ids for git commit ids (agentloop.vcs.branch_log.jj_changes), asked of a real jj
repository made from git's: the ones it holds are answered, however many are asked at once; the
ones it does not hold are answered as such, and none when jj cannot answer."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.branch_log import jj_changes
from tests.support.repos import git, jj, make_repo


def test_every_commit_jj_holds_is_named_even_among_thousands_asked(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "colocated")
    head = git(root, "rev-parse", "HEAD").strip()
    change = jj(root, "log", "--no-graph", "-r", f"commit_id({head})", "-T", "change_id").strip()
    # Commits jj does not hold (as a plan of thousands of tasks a git run did may name, or
    # commits reset away before jj took git's in): said so, and they do not hide the one it
    # holds. 3000 of them make one revset of over 128 KiB, more than Linux takes in one argument.
    unknown = [f"{n:040x}" for n in range(1, 3001)]
    assert jj_changes(root, [head]) == {head: change}
    assert jj_changes(root, [*unknown, head]) == {head: change, **dict.fromkeys(unknown)}


def test_no_commit_is_said_to_be_missing_when_jj_cannot_answer(tmp_path: Path) -> None:
    (tmp_path / "no-repo").mkdir()
    assert jj_changes(tmp_path / "no-repo", [f"{1:040x}"]) == {}
