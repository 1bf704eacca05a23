"""Which backend has which of the abilities only some have (agentloop.vcs.protocol): the run core
asks `isinstance(vcs, Ability)` and takes another path for a backend without it, so a method
renamed on one backend would change what a run does without an error anywhere. Each backend is
opened on a real repository, as a run opens it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.vcs import protocol as p
from agentloop.vcs.git import worktrees
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.git.lane import LaneGit
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.jj import workspaces
from agentloop.vcs.jj.backend import JjVcs
from agentloop.vcs.jj.lane import LaneJj
from agentloop.vcs.jj.mainline import JjMainLine
from agentloop.vcs.none import NoneVcs
from tests.support.repos import git, jj, make_repo

ABILITIES = (p.Rooted, p.ExpectsMessage, p.CutShort, p.KeepsKilledAttempt, p.KnowsMade,
             p.LandsBeside, p.OnMainLine, p.Settles, p.Keeps, p.SeesCommits, p.LandsLeft,
             p.ResolvesConflicts, p.RefusesDirty, p.Discards, p.LandsOnABranch, p.TakesBack)


def abilities(vcs: object) -> set[str]:
    return {a.__name__ for a in ABILITIES if isinstance(vcs, a)}


def test_none_has_none(tmp_path: Path) -> None:
    assert abilities(NoneVcs()) == set()


def test_git_in_your_checkout(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "git")
    assert abilities(GitVcs(root, root / "tasks.md")) == {"Rooted", "ExpectsMessage", "CutShort",
                                                          "KeepsKilledAttempt", "RefusesDirty"}


def test_a_git_lane(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "git")
    space = worktrees.open_git(root, "1-a", git(root, "rev-parse", "main").strip(), fresh=True)
    lane = LaneGit(space.path, space.path / "tasks.md", GitMainLine.current(root))
    assert abilities(lane) == {"Rooted", "ExpectsMessage", "KeepsKilledAttempt", "KnowsMade",
                               "LandsBeside", "OnMainLine", "LandsLeft", "ResolvesConflicts"}


@pytest.mark.usefixtures("jj_bin")
def test_jj_in_your_checkout(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "jj")
    vcs = JjVcs(root, root / "tasks.md")
    assert abilities(vcs) == {"Rooted", "Settles", "Keeps", "Discards"}
    vcs.missing([])  # what its look at the history found, from its first look on
    assert abilities(vcs) == {"Rooted", "Settles", "Keeps", "Discards", "SeesCommits"}


@pytest.mark.usefixtures("jj_bin")
def test_a_jj_lane(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "jj")
    tip = jj(root, "log", "--no-graph", "-r", "@-", "-T", "change_id").strip()
    space = workspaces.open_jj(root, "1-a", tip, fresh=True)
    lane = LaneJj(space.path, space.path / "tasks.md", JjMainLine(root), space.branch, made=True)
    assert abilities(lane) == {"Rooted", "Settles", "Keeps", "ResolvesConflicts", "TakesBack"}
    lane.missing([])
    assert abilities(lane) == {"Rooted", "Settles", "Keeps", "SeesCommits",
                               "ResolvesConflicts", "TakesBack"}


@pytest.mark.usefixtures("jj_bin")
def test_the_main_lines(tmp_path: Path) -> None:
    # git's names the branch its lanes land on; jj's lanes land below @ and move no bookmark.
    assert abilities(GitMainLine.current(make_repo(tmp_path / "git", "git"))) == {
        "Rooted", "KeepsKilledAttempt", "LandsOnABranch"}
    assert abilities(JjMainLine(make_repo(tmp_path / "jj", "jj"))) == {"Rooted"}
