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
from tests.vcs.test_mainline import git


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


def test_a_killed_attempts_commit_keeps_the_lane_where_it_is(repo: Path) -> None:
    lane = _lane(repo)
    _task(lane, "one")
    # An attempt a killed run left after its agent committed: its task goes on from it.
    lane.begin("two")
    (lane.root / "two.txt").write_text("two\n")
    git(lane.root, "add", "two.txt")
    git(lane.root, "commit", "-qm", "the agent's own")
    own = git(lane.root, "rev-parse", "HEAD")
    _yours(repo)
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    again.prepare()
    assert again.behind()
    assert not again.catch_up()
    assert again.head() == own


def test_a_commit_of_the_lanes_own_with_no_attempt_to_go_on_is_set_aside_and_caught_up(
        repo: Path) -> None:
    # The lane holds a commit that is not on your branch, and no record of an attempt that
    # would go on from it (an agent's commit in its lane outside a task, a rewrite the record
    # of which went): nothing of it is a task's to go on from, so the lane is brought to your
    # branch's tip like any, the commit kept first, never lost.
    lane = _lane(repo)
    _task(lane, "one")
    lane.close()  # its run ended: no attempt is open
    (lane.root / "own.txt").write_text("own\n")
    git(lane.root, "add", "own.txt")
    git(lane.root, "commit", "-qm", "the agent's own")
    own = git(lane.root, "rev-parse", "HEAD")
    tip = _yours(repo)
    said: list[str] = []
    main = GitMainLine.current(repo)
    main.on_wait = said.append
    again = LaneGit(lane.root, lane.root / "tasks.md", main)
    again.prepare()
    assert again.behind()
    assert again.catch_up()
    assert again.head() == tip
    assert not (lane.root / "own.txt").exists()
    assert git(repo, "rev-parse", "refs/agent-loop/rolled-back") == own
    assert git(repo, "show", "refs/agent-loop/rolled-back:own.txt") == "own"
    assert any(own[:12] in line and "refs/agent-loop/rolled-back" in line for line in said), said


def test_a_lane_holding_only_what_landed_as_copies_is_caught_up(repo: Path) -> None:
    # Its task landed as a copy (another lane landed first), then the run stopped: the next
    # run's lane knows nothing of that copy, the change is on your branch all the same.
    lane = _lane(repo)
    _yours(repo)  # before the task lands: it lands as a copy
    _task(lane, "one")
    assert git(repo, "rev-parse", "main") != lane.head()
    _yours_again = (repo / "later.txt")
    _yours_again.write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-qm", "user: later")
    tip = git(repo, "rev-parse", "HEAD")
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    again.prepare()
    assert again.behind() and again.catch_up()
    assert again.head() == tip
    code = proc.run(["git", "rev-parse", "-q", "--verify", "refs/agent-loop/rolled-back"],
                    cwd=repo, check=False).returncode
    assert code != 0  # nothing of its own to keep: its change is on your branch
