"""A git lane before each task (agentloop.vcs.git.lane.LaneGit.behind / catch_up): no process
while the main line is where the lane's last landing left it; brought up to the tip when you
committed meanwhile, after a landing left running beside has landed; left alone while it holds
a commit that is not on the main line."""

from __future__ import annotations

from pathlib import Path

from agentloop import proc
from agentloop.vcs.git import worktrees
from agentloop.vcs.git.lane import LaneGit
from agentloop.vcs.git.mainline import GitMainLine
from tests.vcs.test_mainline import git, repo  # noqa: F401 - the fixture


def _lane(repo: Path) -> LaneGit:
    space = worktrees.open_git(repo, "1-a", git(repo, "rev-parse", "main"), fresh=True)
    lane = LaneGit(space.path, space.path / "tasks.md", GitMainLine.current(repo))
    lane.prepare()
    return lane


def _task(lane: LaneGit, name: str) -> None:
    change = lane.begin(name)
    (lane.root / f"{name}.txt").write_text(name + "\n")
    lane.finish(change, name)


def _yours(repo: Path) -> str:
    (repo / "notes.txt").write_text("user line\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "user: notes")
    return git(repo, "rev-parse", "HEAD")


def test_an_unchanged_branch_costs_no_process(repo: Path) -> None:
    lane = _lane(repo)
    for name in ("one", "two", "three"):
        before = proc.started()
        assert not lane.behind()
        assert proc.started() == before
        _task(lane, name)
    assert git(repo, "rev-parse", "main") == lane.head()  # each landed as itself


def test_your_commit_is_in_the_lane_before_the_next_task(repo: Path) -> None:
    lane = _lane(repo)
    _task(lane, "one")
    tip = _yours(repo)
    assert lane.behind()
    assert lane.catch_up()
    assert lane.head() == tip
    assert (lane.root / "notes.txt").read_text() == "user line\n"
    assert (lane.root / "one.txt").exists()
    before = proc.started()
    assert not lane.behind() and proc.started() == before
    _task(lane, "two")
    assert git(repo, "rev-parse", "main") == lane.head()  # made on the tip: landed as itself


def test_a_landing_beside_lands_before_the_lane_catches_up(repo: Path) -> None:
    lane = _lane(repo)
    change = lane.begin("one")
    (lane.root / "one.txt").write_text("one\n")
    done, running = lane.finish_beside(change, "one")
    assert running
    assert not lane.behind()  # its fast-forward has not run yet: no move
    tip = _yours(repo)
    assert lane.behind()
    assert not lane.catch_up()  # never while it runs beside: its task's record settles it
    assert lane.settle_beside() is None  # refused: the branch moved
    landed = lane.land_left(done.change_id)  # the longer way, as the run's land_beside does
    assert git(repo, "rev-parse", "main^") == tip
    assert lane.behind() and lane.catch_up()
    assert lane.head() == git(repo, "rev-parse", "main") == landed.change_id
    assert (lane.root / "notes.txt").exists() and (lane.root / "one.txt").exists()


def test_a_commit_not_on_the_main_line_keeps_the_lane_where_it_is(repo: Path) -> None:
    lane = _lane(repo)
    _task(lane, "one")
    # Not landed (as an attempt a killed run left after its agent committed).
    (lane.root / "own.txt").write_text("own\n")
    git(lane.root, "add", "own.txt")
    git(lane.root, "commit", "-qm", "the agent's own")
    own = git(lane.root, "rev-parse", "HEAD")
    _yours(repo)
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    again.prepare()
    assert again.behind()
    assert not again.catch_up()
    assert again.head() == own
