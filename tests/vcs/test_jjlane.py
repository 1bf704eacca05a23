"""jj's main line for a parallel run: a lane's change goes under the main checkout's @ with its
change id kept, a conflicting one is put back with the main line untouched, and the user's own
edits in @ on the same file make it wait."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.jj import workspaces
from agentloop.vcs.jj.lane import LaneJj
from agentloop.vcs.jj.mainline import JjMainLine
from agentloop.vcs.landing import IntegrationConflict
from tests.support.repos import make_repo


def jj(repo: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", *args], cwd=repo).stdout.strip()


def one(repo: Path, revset: str, template: str = "change_id") -> str:
    return jj(repo, "log", "--no-graph", "-r", revset, "-T", template)


@pytest.fixture
def repo(tmp_path: Path, jj_bin: str) -> Path:
    root = make_repo(tmp_path / "repo", "jj", {"f.txt": "base\n"}, message="base")
    (root / ".agent-loop").mkdir()
    (root / ".agent-loop" / ".gitignore").write_text("*\n")
    return root


def lane_change(repo: Path, name: str, files: dict[str, str]) -> tuple[str, str]:
    """A described change in lane `name`'s workspace, and the workspace's @ name."""
    space = workspaces.open_jj(repo, name, one(repo, "@-"), fresh=False)
    for path, text in files.items():
        (space.path / path).write_text(text)
    jj(space.path, "commit", "-m", f"task of {name}")
    return one(space.path, "@-"), f"{space.branch}@"


def test_a_change_lands_under_the_users_at_with_its_id(repo: Path) -> None:
    main = JjMainLine(repo)
    change, wc = lane_change(repo, "1-a", {"a.txt": "a\n"})
    commit = main.land(change, wc)
    assert one(repo, "@-") == change and one(repo, change, "commit_id") == commit
    assert (repo / "a.txt").read_text() == "a\n"
    assert one(repo, f"{wc}-") == change  # the lane goes on from it


def test_a_conflict_is_put_back(repo: Path) -> None:
    main = JjMainLine(repo)
    left, left_wc = lane_change(repo, "1-left", {"f.txt": "left\n"})
    right, right_wc = lane_change(repo, "2-right", {"f.txt": "right\n"})
    main.land(left, left_wc)
    tip = main.tip()
    with pytest.raises(IntegrationConflict) as caught:
        main.land(right, right_wc)
    assert caught.value.files == ("f.txt",)
    assert main.tip() == tip and (repo / "f.txt").read_text() == "left\n"
    assert one(repo, "conflicts()") == ""


def test_the_users_edits_in_at_on_the_same_file_make_it_wait(repo: Path) -> None:
    said: list[str] = []
    main = JjMainLine(repo, on_wait=said.append)
    change, wc = lane_change(repo, "1-a", {"f.txt": "from the task\n"})
    (repo / "f.txt").write_text("the user's edit\n")
    before = main.tip()
    done: list[str] = []
    landing = threading.Thread(target=lambda: done.append(main.land(change, wc)))
    landing.start()
    landing.join(2.5)
    assert not done and main.tip() == before
    assert (repo / "f.txt").read_text() == "the user's edit\n"
    assert len(said) == 1 and "f.txt" in said[0]
    # The user takes their edit back (committing it would make the task conflict instead).
    (repo / "f.txt").write_text("base\n")
    landing.join(15)
    assert done and one(repo, "@-") == change


def made_here(repo: Path, change: str) -> tuple[str, str, frozenset[str]]:
    """What a lane's finish knows of a change it just made: its parent, commit id and files."""
    files = jj(repo, "log", "--no-graph", "-r", change, "-T",
               'self.diff().files().map(|f| f.path()).join("\\n")')
    return one(repo, f"{change}-"), one(repo, change, "commit_id"), frozenset(files.split("\n"))


def test_the_short_way_moves_the_users_at_onto_the_change_in_one_command(repo: Path) -> None:
    main = JjMainLine(repo)
    name = 'odd "name" here.txt'
    change, wc = lane_change(repo, "1-a", {name: "a\n"})
    (repo / "mine.txt").write_text("the user's own edit\n")
    made = made_here(repo, change)
    before = proc.started()
    assert main.land(change, wc, made) == made[1]  # neither the change nor the lane rewritten
    assert proc.started() - before == 1
    assert one(repo, "@-") == change and (repo / name).read_text() == "a\n"
    assert (repo / "mine.txt").read_text() == "the user's own edit\n"
    assert "mine.txt" in jj(repo, "diff", "--name-only", "-r", "@")
    assert one(repo, f"{wc}-") == change


def test_the_short_way_waits_for_the_users_edits_on_the_changes_file(repo: Path) -> None:
    said: list[str] = []
    main = JjMainLine(repo, on_wait=said.append)
    change, wc = lane_change(repo, "1-a", {"f.txt": "from the task\n"})
    (repo / "f.txt").write_text("the user's edit\n")
    made = made_here(repo, change)
    done: list[str] = []
    landing = threading.Thread(target=lambda: done.append(main.land(change, wc, made)))
    landing.start()
    landing.join(2.5)
    assert not done and (repo / "f.txt").read_text() == "the user's edit\n"
    assert one(repo, f"@- & {change}") == ""
    assert len(said) == 1 and "f.txt" in said[0]
    (repo / "f.txt").write_text("base\n")
    landing.join(15)
    assert done and one(repo, "@-") == change


def test_the_short_way_never_drops_what_landed_since_the_change_was_made(repo: Path) -> None:
    main = JjMainLine(repo)
    first, first_wc = lane_change(repo, "1-a", {"a.txt": "a\n"})
    second, second_wc = lane_change(repo, "2-b", {"b.txt": "b\n"})
    main.land(first, first_wc, made_here(repo, first))
    main.land(second, second_wc, made_here(repo, second))  # made on the tip before the first
    assert one(repo, "@-") == second and one(repo, "@--") == first
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "b.txt").read_text() == "b\n"


def new_lane(repo: Path, name: str) -> LaneJj:
    """A lane as a parallel run makes it: a workspace just added on the main line's tip."""
    space = workspaces.open_jj(repo, name, one(repo, "@-"), fresh=True)
    lane = LaneJj(space.path, space.path / "tasks.md", JjMainLine(repo), space.branch, made=True)
    lane.prepare()
    return lane


def test_a_new_lanes_first_task_lands_the_short_way(repo: Path) -> None:
    tip = one(repo, "@-")
    lane = new_lane(repo, "1-a")
    change = lane.begin("agent-loop: a")
    (lane.root / "a.txt").write_text("a\n")
    before = proc.started()
    done = lane.finish(change, "agent-loop: a")
    # Its `jj commit`, then one `jj rebase` of your @ (11 before: the task's change began on
    # the workspace's own empty change, not on the tip, so it landed the long way).
    assert proc.started() - before == 2
    assert one(repo, "@-") == done.change_id and one(repo, "@--") == tip
    assert (repo / "a.txt").read_text() == "a\n"
    second = lane.begin("agent-loop: b")
    (lane.root / "b.txt").write_text("b\n")
    lane.finish(second, "agent-loop: b")
    lane.close()
    assert one(repo, "@-") == second.change_id and one(repo, "@--") == done.change_id


def test_files_put_in_a_new_lane_before_its_first_task_are_no_tasks(repo: Path) -> None:
    lane = new_lane(repo, "1-a")
    (lane.root / "setup.out").write_text("what lane-setup wrote\n")  # no .gitignore names it
    change = lane.begin("agent-loop: a")
    (lane.root / "a.txt").write_text("a\n")
    done = lane.finish(change, "agent-loop: a")
    assert done.files == ("a.txt",)
    assert jj(repo, "diff", "--name-only", "-r", done.change_id) == "a.txt"
    assert not (repo / "setup.out").exists()


def test_a_killed_checkout_runs_change_taken_up_in_a_lane_and_dropped_leaves_no_stale_checkout(
        repo: Path) -> None:
    # A run in your checkout killed while its agent worked, after the agent's own `jj new`:
    # your checkout's @ sits on the task's change. The next run works in a lane, made on the
    # main line's tip (that change), takes the change up (kept for its task) and its attempt
    # fails: dropped from the lane, jj rebases your @ off it. Taken up or not, the change is
    # not one this run began, so your checkout is brought up to date at once (counted as
    # begun here, your checkout is left stale, and the task's landing there stops the run).
    from agentloop.vcs.jj.backend import JjVcs
    from agentloop.vcs.protocol import Change

    killed = JjVcs(repo, repo / "tasks.md")
    killed.prepare()
    change = killed.begin("agent-loop: a")
    (repo / "a.txt").write_text("a\n")
    jj(repo, "new")  # the agent's own; then the kill: nothing more of that run
    lane = new_lane(repo, "1-a")
    assert lane.abandon(Change(change_id=change.change_id)) is None
    assert lane.keeps(change.change_id)
    again = lane.begin("agent-loop: a")
    assert again.kept and again.change_id == change.change_id
    assert not lane.work.began(again.change_id)
    kept = lane.abandon(again)
    assert kept is not None and "rolled back" in kept
    jj(repo, "status")  # jj refuses to run in a stale working copy
    assert one(repo, f"present({change.change_id})") == ""


def test_a_lanes_change_back_after_jj_undo_is_taken_up_as_the_stopped_runs(repo: Path) -> None:
    # A run in a lane stopped while its agent worked: its change dropped (kept aside), then
    # `jj undo` in your checkout brought it back as the lane's @. The next run's begin goes on
    # in it, with the agent's file; it is still the stopped run's change, not one this run
    # began (JjVcs.began), as a change a killed run kept and this run took up is (above).
    from agentloop.vcs.jj.lane import LaneJj

    stopped = new_lane(repo, "1-a")
    change = stopped.begin("agent-loop: a")
    (stopped.root / "a.txt").write_text("a\n")
    assert stopped.abandon(change) is not None  # the stop: kept aside, dropped
    jj(repo, "undo")
    space = workspaces.open_jj(repo, "1-a", one(repo, "@-"), fresh=False)  # the next run's
    lane = LaneJj(space.path, space.path / "tasks.md", JjMainLine(repo), space.branch)
    lane.prepare()
    again = lane.begin("agent-loop: a")
    assert again.kept and again.change_id == change.change_id
    assert (lane.root / "a.txt").read_text() == "a\n"
    assert not lane.work.began(again.change_id)
    kept = lane.abandon(again)
    assert kept is not None and "rolled back" in kept
    jj(repo, "status")  # jj refuses to run in a stale working copy
    assert one(repo, f"present({change.change_id})") == ""


def test_a_failed_attempt_in_a_new_lane_is_rolled_back_even_after_the_agents_commit(
        repo: Path) -> None:
    lane = new_lane(repo, "1-a")
    change = lane.begin("agent-loop: a")
    (lane.root / "a.txt").write_text("a\n")
    jj(lane.root, "commit", "-m", "the agent's wip")
    kept = lane.abandon(change)
    assert not lane.keeps(change.change_id)  # only an earlier run's change is gone on from
    assert kept is not None and "rolled back" in kept
    assert not (lane.root / "a.txt").exists()
    assert jj(repo, "log", "--no-graph", "-r", f"present({change.change_id})", "-T",
              "change_id") == ""
