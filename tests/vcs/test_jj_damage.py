"""jj's git store that lost an object (a colocated repository's commit a `git gc --prune=now`
deleted) is said in one line, the same from both doors that meet it: a jj command that failed
(agentloop.vcs.jj.run.failure) and a history that cannot be read (agentloop.vcs.branch_log),
both by agentloop.vcs.jj.run.damage."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.errors import VcsError
from agentloop.vcs.branch_log import branch_history
from agentloop.vcs.jj.run import Jj, damage
from tests.support.repos import git, make_repo

pytestmark = pytest.mark.usefixtures("jj_bin")


def test_a_lost_object_is_one_line_from_a_command_and_from_the_history(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "colocated", message="agent-loop: (ungrouped) / one")
    head = git(root, "rev-parse", "HEAD").strip()
    (root / ".git" / "objects" / head[:2] / head[2:]).unlink()
    detail = Jj(root).run("--ignore-working-copy", "log", "-r", "::@", codes=None).stderr
    said = damage(detail)
    assert said is not None and "\n" not in str(said), detail
    assert "damaged" in str(said) and f"commit {head[:12]}" in str(said), said
    assert "git fsck" in str(said), said
    with pytest.raises(VcsError) as failed:
        Jj(root).run("--ignore-working-copy", "log", "-r", "::@")
    with pytest.raises(VcsError) as read:
        branch_history("jj", root)
    assert str(failed.value) == str(read.value) == str(said)


def test_other_failures_are_no_damage() -> None:
    assert damage("Error: Revision `abc` doesn't exist") is None
    assert damage("Error: Workspace not found") is None
