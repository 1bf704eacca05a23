"""Parallel lanes against careless agents and a user who keeps working (issue 31, the VCS side):
a landing lands exactly the task, nothing in a lane goes unless it is on the main line, lanes
open side by side without racing, a landing that waits gives up as held, errors name the real
cause, and after every step the lane is checked against what agent-loop recorded."""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentloop import AGENT_REFLOG_ACTION, lane_mark
from agentloop.errors import VcsError
from agentloop.vcs import lanes
from agentloop.vcs.breach import Kind, LaneBreach
from agentloop.vcs.git import reflog, teardown, worktree_list, worktrees
from agentloop.vcs.git.lane import LaneGit
from agentloop.vcs.git.lane_as_recorded import check_git_lane
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.git.run import Git
from agentloop.vcs.landing import LandingHeld
from agentloop.vcs.protocol import Change
from tests.support.repos import agent_git, make_repo
from tests.vcs.test_mainline import git, lane_commit


def files_of(repo: Path, commit: str) -> list[str]:
    return git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()


# -- a landing lands exactly the task ------------------------------------------------------------

def test_a_users_revert_of_a_landed_task_stays_reverted(repo: Path) -> None:
    main = GitMainLine.current(repo)
    task = lane_commit(repo, "g1", {"g1t1.txt": "1.1\n"}, "task 1.1")
    main.land(lane_commit(repo, "g2", {"g2.txt": "2\n"}, "group 2's task"))
    first = main.land(task)  # another group landed first: it lands as a copy
    assert first != task
    git(repo, "revert", "--no-edit", first)  # as the README suggests
    second = main.land(lane_commit(repo, "g1", {"g1t2.txt": "1.2\n"}, "task 1.2"))
    assert not (repo / "g1t1.txt").exists()
    assert files_of(repo, second) == ["g1t2.txt"]


def test_other_groups_later_edits_never_conflict_with_a_groups_earlier_tasks(repo: Path) -> None:
    main = GitMainLine.current(repo)
    task = lane_commit(repo, "g1", {"shared.txt": "from group 1\n"}, "task 1.1")
    main.land(lane_commit(repo, "g3", {"g3.txt": "3\n"}, "group 3's task"))
    main.land(task)  # as a copy
    main.land(lane_commit(repo, "g2", {"shared.txt": "group 2 rewrote it\n"}, "task 2.1"))
    landed = main.land(lane_commit(repo, "g1", {"own.txt": "1.2\n"}, "task 1.2"))
    assert files_of(repo, landed) == ["own.txt"]
    assert (repo / "shared.txt").read_text() == "group 2 rewrote it\n"


def test_a_landing_against_the_parent_costs_a_few_milliseconds(repo: Path) -> None:
    main = GitMainLine.current(repo)
    main.land(lane_commit(repo, "g2", {"g2.txt": "2\n"}, "other"))
    commit = lane_commit(repo, "g1", {"g1.txt": "1\n"}, "task")
    started = time.perf_counter()
    for _ in range(5):
        main._replay(main.tip(), commit)
    assert (time.perf_counter() - started) / 5 < 0.5  # six git processes: well under a second


# -- nothing in a lane goes unless it is on the main line ------------------------------------

def test_a_lane_branch_with_work_not_on_the_main_line_is_kept_before_it_goes(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    landed = worktrees.open_git(repo, "1-a", base, fresh=True)
    (landed.path / "a.txt").write_text("a\n")
    git(landed.path, "add", "a.txt")
    git(landed.path, "commit", "-qm", "landed")
    GitMainLine.current(repo).land(git(landed.path, "rev-parse", "HEAD"))
    unlanded = worktrees.open_git(repo, "2-b", base, fresh=True)
    (unlanded.path / "b.txt").write_text("b\n")
    git(unlanded.path, "add", "b.txt")
    git(unlanded.path, "commit", "-qm", "an agent's commit nobody landed")
    (unlanded.path / "loose.txt").write_text("never committed\n")
    notes = teardown.remove_git(repo, landed, drop_branch=True, main="main")
    notes += teardown.remove_git(repo, unlanded, drop_branch=True, main="main")
    assert git(repo, "branch", "--list", "agent-loop/*") == ""
    kept = git(repo, "for-each-ref", "--format=%(refname)", "refs/agent-loop/kept/").split()
    assert kept == ["refs/agent-loop/kept/2-b"]
    assert git(repo, "show", "refs/agent-loop/kept/2-b:b.txt") == "b"
    assert git(repo, "show", "refs/agent-loop/kept-files/2-b:loose.txt") == "never committed"
    assert any("refs/agent-loop/kept/2-b" in n for n in notes) and len(notes) == 2


# -- lanes open and close side by side -------------------------------------------------------

def test_fifty_lanes_open_and_close_eight_at_once(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    names = [lanes.lane_name(n, f"group {n}") for n in range(1, 51)]
    with ThreadPoolExecutor(8) as pool:
        opened = list(pool.map(lambda name: worktrees.open_git(repo, name, base, True), names))
    registered = worktree_list.git_worktrees(repo)
    assert all(lane.path in registered and (lane.path / "f.txt").exists() for lane in opened)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda lane: teardown.remove_git(repo, lane, drop_branch=True), opened))
    assert list(worktree_list.git_worktrees(repo)) == [repo.resolve()]


# -- waits end -------------------------------------------------------------------------------

def test_a_landing_waiting_on_the_users_edit_is_held_after_lane_wait(repo: Path) -> None:
    (repo / "f.txt").write_text("the user's edit, from before the run\n")
    said: list[str] = []
    main = GitMainLine(repo, "refs/heads/main", on_wait=said.append, wait_limit=0.3)
    commit = lane_commit(repo, "a", {"f.txt": "from the task\n"}, "task")
    before = main.tip()
    with pytest.raises(LandingHeld) as held:
        main.land(commit)
    assert held.value.files == ("f.txt",) and "since" in str(held.value)
    assert "your uncommitted edits to f.txt" in str(held.value)
    assert len(said) == 1 and "waiting since" in said[0]  # said once, not every second
    assert main.tip() == before and git(repo, "rev-parse", "a") == commit  # the work is kept


def test_a_write_into_the_checkout_during_the_run_is_not_blamed_on_the_user(repo: Path) -> None:
    said: list[str] = []
    main = GitMainLine(repo, "refs/heads/main", on_wait=said.append, wait_limit=0.2)
    commit = lane_commit(repo, "a", {"README.md": "the task's\n"}, "task")
    (repo / "README.md").write_text("an agent wrote this into your checkout\n")
    with pytest.raises(LandingHeld) as held:
        main.land(commit)
    # One subject, one verb: the files, changed meanwhile, overlap the task's change.
    changed = (f"README.md in {repo}, changed during this run after it began (an agent writing "
               "outside its lane, or you meanwhile), overlap")
    assert f"held: {changed} task commit {commit[:12]}'s change" in str(held.value)
    assert "your uncommitted edits" not in str(held.value)
    assert len(said) == 1 and f"{changed} a finished task's change;" in said[0], said


# -- errors name the real cause --------------------------------------------------------------

def test_a_lane_folder_removed_from_outside_is_named(repo: Path) -> None:
    lane = worktrees.open_git(repo, "1-a", git(repo, "rev-parse", "main"), fresh=True)
    git(repo, "worktree", "remove", "--force", str(lane.path))
    with pytest.raises(VcsError, match="is gone \\(removed from outside"):
        Git(lane.path).out("reset", "-q")
    assert "git not found" not in str(check_git_lane(GitLaneRecord(
        lane.path, "refs/heads/agent-loop/1-a", None, repo, "refs/heads/main")))


# -- after every step, trust nothing the agent could touch -----------------------------------

@pytest.fixture
def lane(repo: Path) -> LaneGit:
    space = worktrees.open_git(repo, "1-a", git(repo, "rev-parse", "main"), fresh=True)
    vcs = LaneGit(space.path, space.path / "tasks.md", GitMainLine.current(repo))
    vcs.prepare()
    change = vcs.begin("task 1")
    _write(space.path, "one.txt")
    assert vcs.finish(change, "task 1").files == ("one.txt",)
    return vcs


def _write(folder: Path, name: str) -> bool:
    (folder / name).write_text(name + "\n")
    return True


def _task_2_and_a_stray_file(repo: Path, lane: LaneGit) -> tuple[Change, list[str]]:
    """Task 2 begun in `lane` and its file written, while an agent wrote a file into your
    checkout at `repo`; with the list that gathers what the main line says (on_wait)."""
    said: list[str] = []
    lane.main.on_wait = said.append
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    (repo / "stray.txt").write_text("an agent wrote into your checkout\n")
    return change, said


@pytest.mark.parametrize("hostile, kind, repair", [
    (["checkout", "-q", "--ignore-other-worktrees", "main"], Kind.CHECKED_OUT,
     "switch agent-loop/1-a"),
    (["update-ref", "-d", "refs/heads/agent-loop/1-a"], Kind.BRANCH_DELETED,
     "git branch agent-loop/1-a"),
    (["reset", "-q", "--hard", "HEAD~1"], Kind.BRANCH_REWOUND, "reset --hard"),
])
def test_what_an_agent_does_outside_its_task_stops_the_step(
        repo: Path, lane: LaneGit, hostile: list[str], kind: Kind, repair: str) -> None:
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(lane.root, *hostile)
    if kind is Kind.CHECKED_OUT:  # and then commits on your branch
        git(lane.root, "commit", "-qm", "the agent's own commit", "--allow-empty")
    tip = git(repo, "rev-parse", "main")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 2")
    breach = caught.value.breach
    assert breach.kind is kind and breach.stops
    assert repair in breach.text() and "\n" not in breach.text()
    if kind is Kind.CHECKED_OUT:
        assert "your branch main" in breach.line
    assert git(repo, "rev-parse", "main") == tip  # nothing of the step landed
    assert (lane.root / "two.txt").exists()      # and nothing of it is lost


def test_a_lane_left_off_its_branch_says_so_on_every_plain_run(repo: Path, lane: LaneGit) -> None:
    git(lane.root, "update-ref", "-d", "refs/heads/agent-loop/1-a")
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    with pytest.raises(LaneBreach, match="deleted its lane's branch agent-loop/1-a"):
        again.prepare()


def test_a_lane_a_killed_run_left_on_your_branch_is_refused_before_anything_runs(
        repo: Path, lane: LaneGit) -> None:
    # Its branch and git dir are read from files now: they must still tell this apart.
    git(lane.root, "checkout", "-q", "--ignore-other-worktrees", "main")
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    with pytest.raises(LaneBreach, match="checked out your branch main"):
        again.prepare()


def test_a_clean_step_passes_and_a_checkout_write_is_said_not_stopped(repo: Path,
                                                                      lane: LaneGit) -> None:
    change, said = _task_2_and_a_stray_file(repo, lane)
    done = lane.finish(change, "task 2")
    assert files_of(repo, done.change_id) == ["two.txt"]
    # The agent's or yours, time alone cannot tell: said as found, not the task's note (its
    # record would say it again under every task during which you edited).
    [line] = said
    assert "stray.txt" in line and "while this lane's agent ran" in line
    assert not done.note
    # An untracked file has no diff: no `git diff` offered for it.
    assert "git diff" not in line


def test_the_look_at_your_checkout_runs_beside_the_lanes_commit(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A `git` first on PATH whose `status` of your checkout (`git -C <it> status`) waits for
    # the lane's `commit` to start: looked at one after the other, the status gives up and
    # the step fails.
    real, shims, flag = shutil.which("git"), tmp_path / "shims", tmp_path / "committing"
    shims.mkdir()
    (shims / "git").write_text(
        "#!/bin/sh\n"
        'case " $* " in\n'
        '  *" status "*) if [ "$2" = "$MAIN" ] && [ -e "$FLAG.armed" ]; then i=0\n'
        '    while [ ! -e "$FLAG" ] && [ $i -lt 300 ]; do sleep 0.01; i=$((i+1)); done\n'
        '    [ -e "$FLAG" ] || { echo "status alone" >&2; exit 3; }; fi ;;\n'
        '  *" commit "*) [ -e "$FLAG.armed" ] && : > "$FLAG" ;;\n'
        "esac\n"
        f'exec "{real}" "$@"\n')
    (shims / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    monkeypatch.setenv("MAIN", str(repo.resolve()))
    monkeypatch.setenv("FLAG", str(flag))
    lane = LaneGit(worktrees.open_git(repo, "1-a", git(repo, "rev-parse", "main"),
                                      fresh=True).path, repo / "tasks.md",
                   GitMainLine.current(repo))  # its git runners take PATH as it is now
    lane.prepare()
    lane.finish(lane.begin("task 1"), "task 1")  # a first step: the record the next one checks
    change, said = _task_2_and_a_stray_file(repo, lane)
    Path(f"{flag}.armed").touch()
    done = lane.finish(change, "task 2")
    assert files_of(repo, done.change_id) == ["two.txt"]
    assert any("stray.txt" in line for line in said)  # what the look found is said


# -- an agent's own commits belong to its task, also across a kill ---------------------------

def test_an_agents_commit_before_a_kill_stays_and_its_task_goes_on_from_it(
        repo: Path, lane: LaneGit) -> None:
    change = lane.begin("task 2")
    assert change is not None and lane.record is not None
    began = lane.record.head
    _write(lane.root, "two.txt")
    git(lane.root, "add", "two.txt")
    git(lane.root, "commit", "-qm", "the agent's own commit")
    _write(lane.root, "three.txt")  # and a file not yet committed
    # Killed here, before finish. The next run opens the same lane:
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    notes = again.prepare()
    assert any("the task goes on from them" in n for n in notes), notes
    assert git(lane.root, "rev-parse", "HEAD") != began  # the agent's commit is where it was
    # The task begins again on the work it had done: no second payment for it, and its one
    # commit holds the agent's committed and uncommitted files, folded.
    redo = again.begin("task 2")
    assert redo.kept
    done = again.finish(redo, "task 2")
    assert files_of(repo, done.change_id) == ["three.txt", "two.txt"]
    assert "the agent's own commit" in git(repo, "show", "-s", "--format=%B", done.change_id)


def test_an_agents_commit_before_a_kill_is_rolled_back_and_kept_when_another_task_begins(
        repo: Path, lane: LaneGit) -> None:
    change = lane.begin("task 2")
    assert change is not None and lane.record is not None
    began = lane.record.head
    _write(lane.root, "two.txt")
    git(lane.root, "add", "two.txt")
    git(lane.root, "commit", "-qm", "the agent's own commit")
    again = LaneGit(lane.root, lane.root / "tasks.md", GitMainLine.current(repo))
    again.prepare()
    # The plan changed meanwhile: another task begins here. The attempt is no one's to go on
    # from: rolled back, its files kept aside, not left as if they were the user's.
    other = again.begin("task 3")
    assert not other.kept
    assert git(lane.root, "rev-parse", "HEAD") == began
    assert git(repo, "show", "refs/agent-loop/rolled-back:two.txt") == "two.txt"
    assert not (lane.root / "two.txt").exists()


# -- jj: one operation log for every lane -----------------------------------------------------

def test_jj_undo_in_one_lane_stops_that_lanes_step(tmp_path: Path, jj_bin: str) -> None:
    from agentloop.vcs.jj import workspaces
    from agentloop.vcs.jj.lane import LaneJj
    from agentloop.vcs.jj.mainline import JjMainLine
    from tests.vcs.test_jjlane import jj, one

    root = tmp_path / "jjrepo"
    root.mkdir()
    jj(root, "git", "init")
    (root / ".agent-loop").mkdir()
    (root / ".agent-loop" / ".gitignore").write_text("*\n")
    (root / "f.txt").write_text("base\n")
    jj(root, "commit", "-m", "base")
    main = JjMainLine(root)

    def lane_of(name: str) -> LaneJj:
        space = workspaces.open_jj(root, name, one(root, "@-"), fresh=True)
        vcs = LaneJj(space.path, space.path / "tasks.md", main, space.branch)
        vcs.prepare()
        return vcs

    first, second = lane_of("1-a"), lane_of("2-b")
    later = second.begin("agent-loop: task b")
    landing = first.begin("agent-loop: task a")
    _write(first.root, "a.txt")
    first.finish(landing, "agent-loop: task a")
    _write(second.root, "b.txt")
    jj(second.root, "undo")  # the agent's: it acts on the repository's last operation
    with pytest.raises(LaneBreach) as caught:
        second.finish(later, "agent-loop: task b")
    assert caught.value.breach.kind is Kind.OPERATION_UNDONE
    assert "jj op log" in caught.value.breach.text()
    assert not (root / "b.txt").exists()  # nothing of that step landed


def test_a_jj_lane_whose_repository_was_removed_is_named(tmp_path: Path, jj_bin: str) -> None:
    from agentloop.vcs.jj.run import Jj
    from tests.vcs.test_jjlane import jj

    root = tmp_path / "jjrepo"
    root.mkdir()
    jj(root, "git", "init")
    jj(root, "workspace", "add", "--name", "lane", str(tmp_path / "lane"))
    shutil.rmtree(root / ".jj")  # an agent's `rm -rf` of the repository's store
    with pytest.raises(VcsError, match="lost its repository \\(removed or moved from outside"):
        Jj(tmp_path / "lane").out("log")
    shutil.rmtree(tmp_path / "lane")
    with pytest.raises(VcsError, match="is gone \\(removed from outside"):
        Jj(tmp_path / "lane").out("log")


def test_a_renamed_file_in_the_checkout_is_named_by_both_its_paths(tmp_path: Path) -> None:
    # The snapshot of the user's edits a lane compares against: a staged rename is two paths,
    # whole (with renames on, git's -z output gives the old one without its status prefix).
    from agentloop.vcs.git.run import Git
    from agentloop.vcs.git.your_checkout import dirty
    from tests.support.repos import git, init_repo

    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "git")
    (work / "old-name.txt").write_text("x\n")
    git(work, "add", "old-name.txt")
    git(work, "commit", "-qm", "a file to rename")
    git(work, "mv", "old-name.txt", "new-name.txt")
    assert dirty(Git(work)) == ["new-name.txt", "old-name.txt"]


def test_the_look_at_the_checkout_leaves_its_index_alone(tmp_path: Path) -> None:
    # A lane looks at the user's checkout after every task; git status would refresh and write
    # the index back (taking index.lock) wherever an entry's stat no longer matches, as after
    # each landing: a file written per task, and a `git add` of the user's refused meanwhile.
    from agentloop.vcs.git.run import Git
    from agentloop.vcs.git.your_checkout import dirty
    from tests.support.repos import init_repo

    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "git")
    index = work / ".git" / "index"
    os.utime(work / "README.md", ns=(1, 1))  # same content, stat no longer as indexed
    before = os.stat(index)
    assert dirty(Git(work)) == []
    after = os.stat(index)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


LANDED = {
    # what your branch holds in place of the lost commit: (its plan, its author time)
    "amend": ("tasks", "1700000000 +0000"),          # the same commit rewritten: moved
    "other plan": ("tasks-v2", "1700000000 +0000"),  # a plan whose name holds this one's
    "redo": ("tasks", "1700000500 +0000"),           # the task done once more (--again)
}


@pytest.mark.parametrize("what", sorted(LANDED))
def test_a_lost_landed_commit_moved_only_onto_its_own_rewrite(tmp_path: Path, what: str) -> None:
    """A landed commit gone from your branch is moved only when the branch holds a commit
    with the same trailers, value for value, and the same author and author time (what an
    amend or a rebase keeps); another plan's commit or a redo of the task is not it."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "start")

    def commit(plan: str, date: str) -> str:
        message = ("agent-loop: All / task one\n\nAgent-Loop-Plan: " + plan +
                   "\nAgent-Loop-Task: 1 0123456789ab\n")
        git(root, "commit", "-q", "--allow-empty", "-m", message, GIT_AUTHOR_DATE=date,
            GIT_AUTHOR_NAME="A U Thor", GIT_AUTHOR_EMAIL="a@example.com")
        return git(root, "rev-parse", "HEAD")

    lost = commit("tasks", "1700000000 +0000")
    git(root, "reset", "-q", "--hard", "HEAD~1")
    git(root, "commit", "-q", "--allow-empty", "-m", "yours")
    commit(*LANDED[what])
    git(root, "worktree", "add", "-q", "-b", "lane", str(tmp_path / "lane"))
    found = check_git_lane(GitLaneRecord(tmp_path / "lane", "refs/heads/lane", None, root,
                                         "refs/heads/main", (lost,)))
    if what == "amend":
        assert found is None
    else:
        assert found is not None and found.kind is Kind.LANDED_LOST


def test_a_clean_checkout_is_checked_without_asking_where_the_output_goes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each task's check of the user's checkout: nothing dirty, nothing to tell apart from the
    # run's own output file, whose path costs two readlinks to find.
    from agentloop.vcs.git import your_checkout

    asked = []
    monkeypatch.setattr(your_checkout, "own_output", lambda root: asked.append(root) or set())
    assert your_checkout.written(tmp_path, {}, []) is None
    assert asked == []
    (tmp_path / "edited").write_text("x")
    assert your_checkout.written(tmp_path, {}, ["edited"]) is not None
    assert asked == [tmp_path]


def test_a_lanes_step_looks_at_your_checkout_without_a_thread(
        repo: Path, lane: LaneGit, monkeypatch: pytest.MonkeyPatch) -> None:
    # The checkout's `git status` is started before the lane's add and commit and waited for
    # after them: a thread of its own to run it cost a start and GIL hand-overs every task.
    import threading

    started: list[str] = []
    real = threading.Thread.start

    def counted(self: threading.Thread) -> None:
        started.append(self.name)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", counted)
    change, said = _task_2_and_a_stray_file(repo, lane)
    done = lane.finish(change, "task 2")
    assert files_of(repo, done.change_id) == ["two.txt"]
    assert any("stray.txt" in line for line in said)
    assert started == []


# -- what an agent does to your checkout and its shared refs from its lane --------------------

def test_your_branch_moved_back_while_the_agent_ran_stops_the_step(repo: Path,
                                                                    lane: LaneGit) -> None:
    # Your commit after task 1 landed, then the agent's `git -C <your checkout> reset --hard
    # HEAD~1`: the branch is back at the lane's last landing, which the lane's quick look
    # took for "as left"; the step stops, saying where the branch was and how to get it back.
    (repo / "mine.txt").write_text("my commit\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my work")
    yours = git(repo, "rev-parse", "main")
    (repo / "f.txt").write_text("my uncommitted edit\n")
    lane.finish(lane.begin("task 2"), "task 2")  # (a step that changed nothing: it saw that)
    said: list[str] = []
    lane.main.on_wait = said.append
    change = lane.begin("task 3")
    _write(lane.root, "three.txt")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    back = git(repo, "rev-parse", "main")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 3")
    breach = caught.value.breach
    assert breach.kind is Kind.MAIN_REWOUND and breach.stops and "\n" not in breach.text()
    assert f"your branch main was moved from {yours[:12]} back to {back[:12]}" in breach.line
    assert "git reflog main" in breach.line and f"reset --keep {yours[:12]}" in breach.text()
    assert git(repo, "rev-parse", "main") == back  # nothing of the step landed on it
    # (and your uncommitted edit the reset took with it is said, in the stop's own line)
    assert "f.txt (back as committed) in" in breach.line
    assert (lane.root / "three.txt").exists()
    git(repo, "reset", "-q", "--keep", yours[:12])  # the repair the line names
    assert (repo / "mine.txt").read_text() == "my commit\n"


def test_your_branch_deleted_and_made_again_names_where_its_commit_is_really_kept(
        repo: Path, lane: LaneGit) -> None:
    # `git checkout --detach HEAD~1; git branch -D main; git checkout -b main` while the agent
    # works: the branch is back, but `git branch -D` deleted its reflog with it, and the stop
    # said the dropped commit "stays in `git reflog main`", where it is not.
    (repo / "mine.txt").write_text("my commit\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my work")
    yours = git(repo, "rev-parse", "main")
    lane.finish(lane.begin("task 2"), "task 2")
    change = lane.begin("task 3")
    _write(lane.root, "three.txt")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    git(repo, "branch", "-q", "-D", "main")
    git(repo, "checkout", "-q", "-b", "main")
    assert yours not in git(repo, "log", "-g", "--format=%H", "main").split()
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 3")
    line = caught.value.breach.line
    assert f"moved from {yours[:12]}" in line and "git reflog main" not in line, line
    assert f"{yours[:12]} stays in `git reflog` (HEAD's)" in line, line
    assert yours in git(repo, "log", "-g", "--format=%H", "HEAD").split()


def test_a_landed_commit_dropped_with_your_deleted_branch_names_a_reflog_that_holds_it(
        repo: Path, lane: LaneGit) -> None:
    # The same before the step began: the lane's landed task 1 is gone from the branch made
    # again, and the stop's repair said `git reflog main`, which `branch -D` had deleted.
    landed = git(repo, "rev-parse", "main")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    git(repo, "branch", "-q", "-D", "main")
    git(repo, "checkout", "-q", "-b", "main")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 2")
    said = caught.value.breach.text()
    assert f"commit {landed[:12]}" in said and "git reflog main" not in said, said
    assert "`git reflog`" in said, said


@pytest.mark.parametrize("yours", [["commit", "-q", "--allow-empty", "-m", "my next"],
                                   ["commit", "-q", "--amend", "-m", "my work, reworded"]])
def test_your_branch_moved_on_or_reworded_while_the_agent_ran_lands(
        repo: Path, lane: LaneGit, yours: list[str]) -> None:
    (repo / "mine.txt").write_text("my commit\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my work")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(repo, *yours)
    done = lane.finish(change, "task 2")
    assert files_of(repo, done.change_id) == ["two.txt"]
    assert (repo / "mine.txt").exists() and (repo / "two.txt").exists()


def test_your_amend_or_rebase_that_rewrites_your_last_commit_lands(repo: Path,
                                                                     lane: LaneGit) -> None:
    # Your last commit amended with its file edited again (or rebased over a colleague's
    # commit to the same file): the branch no longer holds it, nor its content, yet nothing
    # was dropped from it; the step lands on the branch as it is now.
    (repo / "mine.txt").write_text("my commit\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my work")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    (repo / "mine.txt").write_text("my commit, its typo fixed\n")
    git(repo, "commit", "-qam", "my work", "--amend")
    done = lane.finish(change, "task 2")
    assert files_of(repo, done.change_id) == ["two.txt"]
    assert (repo / "mine.txt").read_text() == "my commit, its typo fixed\n"
    assert (repo / "two.txt").exists()


def test_an_untracked_file_of_yours_deleted_while_the_agent_ran_is_said(repo: Path) -> None:
    # An overwrite was said, a deletion was not: the file is no longer dirty, so no longer
    # listed. Your edit you commit meanwhile is where it was: not said.
    (repo / "notes.txt").write_text("my notes\n")
    (repo / "f.txt").write_text("my edit\n")
    (repo / "other.txt").write_text("mine too\n")
    space = worktrees.open_git(repo, "1-a", git(repo, "rev-parse", "main"), fresh=True)
    said: list[str] = []
    vcs = LaneGit(space.path, space.path / "tasks.md",
                  GitMainLine.current(repo, on_wait=said.append))
    vcs.prepare()
    change = vcs.begin("task 1")
    _write(space.path, "one.txt")
    (repo / "notes.txt").unlink()
    git(repo, "add", "other.txt")
    git(repo, "commit", "-qm", "mine, committed meanwhile")
    assert not vcs.finish(change, "task 1").note  # said as found, the task's note not
    told = said
    assert len(told) == 1 and "changed while this lane's agent ran" in told[0]
    assert "notes.txt (deleted)" in told[0], told
    assert "other.txt" not in told[0] and "f.txt" not in told[0]


def test_an_agents_rm_cached_in_its_lane_is_no_change_of_its_task(repo: Path,
                                                                  lane: LaneGit) -> None:
    # `git rm --cached f.txt` leaves the file on disk as it was: the commit holds it unchanged,
    # so the task's change must not count it, and the lane's index holds it again.
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(lane.root, "rm", "-q", "--cached", "f.txt")
    done = lane.finish(change, "task 2")
    assert done.files == ("two.txt",)
    assert files_of(repo, done.change_id) == ["two.txt"]
    assert git(lane.root, "status", "--porcelain") == ""


def test_an_agents_git_stash_in_its_lane_leaves_your_stash_list(repo: Path,
                                                                lane: LaneGit) -> None:
    # refs/stash is the repository's: the agent's entry showed in your `git stash list`, and
    # your next `git stash pop` would have taken it. Yours stays; the agent's is kept apart.
    (repo / "f.txt").write_text("my edit\n")
    git(repo, "stash", "-q")
    said: list[str] = []
    lane.main.on_wait = said.append
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(lane.root, "stash", "-q", "-u")
    _write(lane.root, "three.txt")
    done = lane.finish(change, "task 2")
    assert files_of(repo, done.change_id) == ["three.txt"]
    listed = git(repo, "stash", "list").splitlines()
    assert len(listed) == 1 and "WIP on main" in listed[0], listed
    # (The fixture's repository does not ignore .agent-loop/: the lane's folder is said too.)
    told = [done.note]  # the task's note
    assert told[0].count("ran `git stash`") == 1 and "not in this task's change" in told[0]
    kept = told[0].split("`git stash apply ")[1].split("`")[0]
    assert kept.startswith("refs/agent-loop/stash/1-a/")
    git(lane.root, "stash", "apply", "-q", kept)
    assert (lane.root / "two.txt").read_text() == "two.txt\n"
    # The next step, with no stash of its own, says nothing and looks at no reflog.
    said.clear()
    change = lane.begin("task 3")
    _write(lane.root, "four.txt")
    assert "ran `git stash`" not in lane.finish(change, "task 3").note
    assert not any("ran `git stash`" in line for line in said)


def test_an_agents_only_stash_entry_leaves_no_empty_stash_behind(repo: Path,
                                                                 lane: LaneGit) -> None:
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(lane.root, "stash", "-q", "-u")
    _write(lane.root, "three.txt")
    lane.finish(change, "task 2")
    assert git(repo, "stash", "list") == ""
    assert git(repo, "for-each-ref", "refs/stash") == ""


# -- an agent's own git commands run in your checkout (`cd` out of its lane) -------------------

def test_an_agents_commit_a_in_your_checkout_stops_and_says_what_it_took(repo: Path,
                                                                         lane: LaneGit) -> None:
    # The agent's `git -C <your checkout> commit -am ...` took your uncommitted edit into a
    # commit on your branch, unsaid; its reflog entry carries the agent's mark, so the step
    # stops on it, nothing landed on top, and the repair gives your edit back uncommitted.
    (repo / "f.txt").write_text("my precious uncommitted edit\n")
    old = git(repo, "rev-parse", "main")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    agent_git(repo, "commit", "-qam", "agent sneaks in")
    sneaked = git(repo, "rev-parse", "main")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 2")
    breach = caught.value.breach
    assert breach.kind is Kind.AGENT_MOVED_MAIN and breach.stops and breach.everywhere
    assert "\n" not in breach.text()
    assert f"moved your branch main from {old[:12]} to {sneaked[:12]}" in breach.line
    assert "it committed what your checkout held uncommitted (f.txt)" in breach.line
    assert git(repo, "rev-parse", "main") == sneaked  # nothing of the step landed on it
    assert (lane.root / "two.txt").exists()
    repair = breach.commands[-1]
    assert repair == f"git -C {repo} reset --soft {old[:12]}"
    git(repo, *repair.split()[3:])
    assert git(repo, "rev-parse", "main") == old
    assert git(repo, "status", "--porcelain", "--", "f.txt").strip() == "M  f.txt"
    assert (repo / "f.txt").read_text() == "my precious uncommitted edit\n"


def test_an_agents_amend_in_your_checkout_is_repaired_with_your_edit_kept(
        repo: Path, lane: LaneGit) -> None:
    # Its `git commit --amend -a` in your checkout rewrote your tip commit and took your
    # uncommitted edit into it: `reset --keep <your commit>` (the advice for a move elsewhere)
    # would write f.txt back as committed and your edit would live on in the reflog only.
    (repo / "mine.txt").write_text("my commit\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my work")
    (repo / "f.txt").write_text("my precious uncommitted edit\n")
    old = git(repo, "rev-parse", "main")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    agent_git(repo, "commit", "-q", "--amend", "-am", "amended by the agent")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 2")
    breach = caught.value.breach
    assert breach.kind is Kind.AGENT_MOVED_MAIN and breach.stops
    assert "rewrote your commit" in breach.line and "f.txt" in breach.line, breach.line
    repair = breach.commands[-1]
    assert repair == f"git -C {repo} reset --soft {old[:12]}"
    git(repo, *repair.split()[3:])
    assert git(repo, "rev-parse", "main") == old
    assert (repo / "f.txt").read_text() == "my precious uncommitted edit\n"
    assert git(repo, "status", "--porcelain", "--", "f.txt").strip() == "M  f.txt"


def test_your_own_commit_a_beside_the_agent_lands(repo: Path, lane: LaneGit) -> None:
    # The same commit made by you (no mark in its reflog entry): yours, the task lands on it.
    (repo / "f.txt").write_text("my edit\n")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(repo, "commit", "-qam", "mine")
    done = lane.finish(change, "task 2")
    assert git(repo, "rev-parse", "main") == done.change_id
    assert "an agent ran git" not in done.note


# Marks of other runs: an agent-loop's before each run had a token of its own (as an agent of
# such a run hands it on to an agent-loop it starts), and a token one digit off this run's.
OTHER_MARKS = ["agent-loop agent", AGENT_REFLOG_ACTION[:-1] + "01"[AGENT_REFLOG_ACTION[-1] == "0"]]


@pytest.mark.parametrize("mark", OTHER_MARKS)
def test_your_commit_a_with_another_runs_mark_beside_the_agent_lands(repo: Path, lane: LaneGit,
                                                                      mark: str) -> None:
    # You started this run from a shell an agent of another run gave its mark to: your commit
    # there carries that mark, not this run's (its agents'): yours, the task lands on it.
    (repo / "f.txt").write_text("my edit\n")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(repo, "commit", "-qam", "mine", GIT_REFLOG_ACTION=mark)
    assert git(repo, "reflog", "-1", "--format=%gs", "main") == f"{mark}: mine"
    done = lane.finish(change, "task 2")
    assert git(repo, "rev-parse", "main~1") == git(repo, "rev-parse", "HEAD@{1}")
    assert git(repo, "rev-parse", "main") == done.change_id
    assert "an agent ran git" not in done.note


def _reflog_of_gits_commands(repo: Path, mark: str) -> list[str]:
    """What git writes in HEAD's reflog for the commands an agent runs, with
    GIT_REFLOG_ACTION=`mark`: each entry's message, the repository's first commit's left out."""
    def run(*args: str) -> None:
        git(repo, *args, GIT_REFLOG_ACTION=mark)
    _write(repo, "a.txt")
    run("add", "a.txt")
    run("commit", "-qm", "a")
    run("commit", "-q", "--amend", "--allow-empty-message", "-m", "")
    run("reset", "-q", "--soft", "HEAD~1")
    run("commit", "-qm", "again")
    run("checkout", "-q", "-b", "side")
    _write(repo, "side.txt")
    run("add", "side.txt")
    run("commit", "-qm", "side")
    run("switch", "-q", "main")
    run("cherry-pick", "side")
    run("reset", "-q", "--hard", "HEAD~1")
    run("merge", "-q", "side")
    run("revert", "--no-edit", "HEAD")
    run("rebase", "-q", "--force-rebase", "side~1")
    (repo / "README.md").write_text("an edit\n")
    run("stash", "-q")
    run("stash", "pop", "-q")
    run("commit", "-qam", "stashed and back")
    return git(repo, "reflog", "--format=%gs", "HEAD").splitlines()[-2::-1]


def test_this_runs_mark_is_told_in_every_entry_git_writes_with_it(tmp_path: Path) -> None:
    # git 2.39 writes the mark alone (checkout, switch), with ": ..." (commit, reset, merge,
    # cherry-pick, revert, stash), ":" alone (an empty message) or " (start): ..." (rebase's
    # steps): each is this run's; another run's mark, even one digit off, is not.
    ours = _reflog_of_gits_commands(make_repo(tmp_path / "ours", "git"), AGENT_REFLOG_ACTION)
    assert len(ours) >= 15 and all(reflog.marked(m) for m in ours), ours
    assert {m[len(AGENT_REFLOG_ACTION):][:2] for m in ours} == {"", ":", ": ", " ("}, ours
    for i, mark in enumerate(OTHER_MARKS):
        theirs = _reflog_of_gits_commands(make_repo(tmp_path / str(i), "git"), mark)
        assert [m.replace(mark, AGENT_REFLOG_ACTION, 1) for m in theirs] == ours
        assert not any(reflog.marked(m) for m in theirs), theirs


def test_an_agents_rm_cached_in_your_checkout_names_the_commands_that_show_and_undo_it(
        repo: Path, lane: LaneGit) -> None:
    # `git diff -- f.txt` shows nothing for a staged deletion: the note names the one that
    # does and the one that puts the index entry back, which work on any git.
    said: list[str] = []
    lane.main.on_wait = said.append
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    git(repo, "rm", "-q", "--cached", "f.txt")
    lane.finish(change, "task 2")
    [line] = said
    assert "f.txt (its deletion staged, the file left on disk)" in line, line
    see = f"git -C {repo} diff --cached -- f.txt"
    undo = f"git -C {repo} reset -q -- f.txt"
    assert f"`{see}`" in line and f"`{undo}`" in line
    assert f"git -C {repo} diff -- f.txt" not in line
    assert "deleted file mode" in git(repo, *see.split()[3:])
    git(repo, *undo.split()[3:])
    assert git(repo, "status", "--porcelain", "--", "f.txt") == ""


def test_an_agents_checkout_in_your_checkout_is_said_with_the_way_back(repo: Path,
                                                                       lane: LaneGit) -> None:
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    agent_git(repo, "checkout", "-q", "-b", "agentbranch")
    done = lane.finish(change, "task 2")
    assert "an agent ran git in your checkout" in done.note
    assert "switched it from main to agentbranch" in done.note
    assert f"`git -C {repo} switch main`" in done.note
    assert files_of(repo, git(repo, "rev-parse", "main")) == ["two.txt"]  # landed on main


def test_an_agents_stash_in_your_checkout_is_said_with_the_way_back(repo: Path,
                                                                    lane: LaneGit) -> None:
    (repo / "f.txt").write_text("my edit\n")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    agent_git(repo, "stash", "-q")
    done = lane.finish(change, "task 2")
    assert "its `git stash` there set your uncommitted edits aside" in done.note, done.note
    assert f"`git -C {repo} stash pop`" in done.note
    git(repo, "stash", "pop", "-q")
    assert (repo / "f.txt").read_text() == "my edit\n"


def test_an_agent_that_commits_on_your_branch_from_its_lane_is_said_as_checked_out(
        repo: Path, lane: LaneGit) -> None:
    # Its commit's entry in your branch's log carries the mark too: what the lane's check
    # finds first (the lane off its branch) is the line, not "ran git in your checkout".
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    agent_git(lane.root, "checkout", "-q", "--ignore-other-worktrees", "main")
    agent_git(lane.root, "commit", "-qm", "the agent's own commit", "--allow-empty")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 2")
    assert caught.value.breach.kind is Kind.CHECKED_OUT


def _step_with_your_edit(repo: Path, lane: LaneGit) -> tuple[Change, list[str]]:
    """Your edit of f.txt, seen by a step of the lane's; then task 3 begun, its file written."""
    said: list[str] = []
    lane.main.on_wait = said.append
    (repo / "f.txt").write_text("my edit\n")
    lane.finish(lane.begin("task 2"), "task 2")
    said.clear()
    change = lane.begin("task 3")
    _write(lane.root, "three.txt")
    return change, said


def test_an_agents_commit_in_your_checkout_undone_again_stops_nothing(repo: Path,
                                                                      lane: LaneGit) -> None:
    change, said = _step_with_your_edit(repo, lane)
    tip = git(repo, "rev-parse", "main").strip()
    # It commits in its own lane (allowed), and in your checkout `commit -a`, then undoes it.
    git(lane.root, "add", "three.txt")
    git(lane.root, "commit", "-qm", "agent's own lane commit")
    agent_git(repo, "commit", "-qam", "oops")
    agent_git(repo, "reset", "-q", "--soft", "HEAD~1")
    done = lane.finish(change, "task 3")  # no LaneBreach: your branch is where it was
    assert git(repo, "rev-parse", "main~1").strip() == tip
    assert "moved your branch" not in (done.note or "") + "".join(said)
    assert f"left its HEAD at {tip[:12]}, where it was" in done.note
    assert "oops" in done.note


def test_an_agents_stash_and_pop_in_your_checkout_is_said_as_it_ran(repo: Path,
                                                                    lane: LaneGit) -> None:
    change, said = _step_with_your_edit(repo, lane)
    agent_git(repo, "stash", "-q")
    agent_git(repo, "stash", "pop", "-q")
    done = lane.finish(change, "task 3")
    assert (repo / "f.txt").read_text() == "my edit\n"
    assert "back as committed" not in done.note and "reset --hard" not in done.note
    assert "an agent ran git in your checkout" in done.note and "where it was" in done.note


def test_an_agents_reset_hard_in_your_checkout_says_your_edit_went_back(repo: Path,
                                                                        lane: LaneGit) -> None:
    (repo / "f.txt").write_text("committed\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "f")
    change, said = _step_with_your_edit(repo, lane)
    agent_git(repo, "reset", "-q", "--hard")
    done = lane.finish(change, "task 3")
    assert "f.txt went back as committed" in done.note


def test_an_agents_commit_a_then_reset_hard_in_your_checkout_says_where_your_edit_is(
        repo: Path, lane: LaneGit) -> None:
    # Its `commit -a` took your edit into a commit, its `reset --hard HEAD~1` dropped that
    # commit: your branch is back where it was (no stop), the edit is in the dropped commit.
    (repo / "f.txt").write_text("committed\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "f")
    change, said = _step_with_your_edit(repo, lane)
    agent_git(repo, "commit", "-qam", "agent-sneaks-in")
    dropped = git(repo, "rev-parse", "HEAD").strip()
    agent_git(repo, "reset", "-q", "--hard", "HEAD~1")
    done = lane.finish(change, "task 3")
    assert (repo / "f.txt").read_text() == "committed\n"
    assert "the edit in it gone" not in done.note, done.note
    assert f"commit {dropped[:12]}" in done.note, done.note
    command = f"git -C {repo} checkout {dropped[:12]} -- f.txt"
    assert f"`{command}`" in done.note, done.note
    git(repo, *command.split()[3:])  # as the line says: your edit is back
    assert (repo / "f.txt").read_text() == "my edit\n"


def test_an_agents_checkout_of_another_branch_and_back_names_no_commit_of_it(
        repo: Path, lane: LaneGit) -> None:
    """Its `git checkout -f feature && git checkout -f main` in your checkout wrote your edit
    over as committed. The line named feature's tip as "the commit it made there and dropped
    again" that holds your file, and its `git checkout <tip> -- f.txt` would have put
    feature's f.txt over your file: the agent made no commit, your edit is gone."""
    (repo / "f.txt").write_text("committed\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "f")
    change, said = _step_with_your_edit(repo, lane)
    # feature's one commit is on your branch's tip: a child of where the agent's HEAD was.
    git(repo, "worktree", "add", "-q", "-b", "feature", str(repo.parent / "feature"), "main")
    (repo.parent / "feature" / "f.txt").write_text("feature's f\n")
    git(repo.parent / "feature", "commit", "-qam", "feature: f")
    git(repo, "worktree", "remove", str(repo.parent / "feature"))
    tip = git(repo, "rev-parse", "feature").strip()
    assert git(repo, "rev-parse", "feature^").strip() == git(repo, "rev-parse", "main").strip()
    agent_git(repo, "checkout", "-q", "-f", "feature")
    agent_git(repo, "checkout", "-q", "-f", "main")
    done = lane.finish(change, "task 3")
    assert tip[:12] not in done.note, done.note
    assert "f.txt went back as committed, the edit in it gone" in done.note, done.note


def test_an_agents_fast_forward_of_your_branch_is_not_called_your_edits(repo: Path,
                                                                        lane: LaneGit) -> None:
    tip = git(repo, "rev-parse", "main").strip()
    git(repo, "branch", "other")
    git(repo, "worktree", "add", "-q", str(repo.parent / "other"), "other")
    (repo.parent / "other" / "pulled.txt").write_text("from elsewhere\n")
    git(repo.parent / "other", "add", "pulled.txt")
    git(repo.parent / "other", "commit", "-qm", "pulled")
    change, said = _step_with_your_edit(repo, lane)
    agent_git(repo, "merge", "-q", "--ff-only", "other")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 3")
    line = caught.value.breach.line
    assert "your edits" not in line and "reset --soft" not in line
    assert "brought in 1 commit(s) made elsewhere" in line and "pulled.txt" in line
    assert caught.value.breach.commands[-1] == f"git -C {repo} reset --keep {tip[:12]}"


def test_git_reflog_action_from_outside_is_not_taken_for_an_agents(
        repo: Path, lane: LaneGit, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run started from an agent's shell, whose environment carries the agents' mark.
    monkeypatch.setenv("GIT_REFLOG_ACTION", "agent-loop agent")
    for n in (2, 3):
        change = lane.begin(f"task {n}")
        _write(lane.root, f"{n}.txt")
        done = lane.finish(change, f"task {n}")
        assert not done.note
    assert "agent-loop agent" not in git(repo, "reflog", "-5", "main")


def _other_lanes_git(repo: Path, *args: str) -> None:
    """git as another lane's agent runs it in your checkout: its lane's own mark."""
    git(repo, *args, GIT_REFLOG_ACTION=lane_mark("tasks.0abc12-2-other"))


def test_another_lanes_agents_switch_of_your_checkout_is_not_this_lanes_to_say(
        repo: Path, lane: LaneGit) -> None:
    # It falls in this lane's step all the same; its own lane's check says it, on its task.
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    _other_lanes_git(repo, "checkout", "-q", "-b", "agentbranch")
    done = lane.finish(change, "task 2")
    assert "agentbranch" not in (done.note or ""), done.note


def test_another_lanes_agents_commit_on_your_branch_names_that_lane(
        repo: Path, lane: LaneGit) -> None:
    # A stop of every group all the same, but not said as this lane's agent's doing.
    (repo / "f.txt").write_text("my precious uncommitted edit\n")
    change = lane.begin("task 2")
    _write(lane.root, "two.txt")
    _other_lanes_git(repo, "commit", "-qam", "agent sneaks in")
    with pytest.raises(LaneBreach) as caught:
        lane.finish(change, "task 2")
    breach = caught.value.breach
    assert breach.kind is Kind.AGENT_MOVED_MAIN and breach.everywhere
    assert breach.line.startswith("the agent of another lane (tasks.0abc12-2-other) ran git "
                                  "in your checkout"), breach.line


def test_an_entrys_lane_is_read_from_its_mark() -> None:
    mark = lane_mark("tasks.0abc12-1-a")
    assert reflog.lane_of(f"{mark}: my subject") == "tasks.0abc12-1-a"
    assert reflog.lane_of(mark) == "tasks.0abc12-1-a"
    assert reflog.lane_of(f"{mark} (start): checkout main") == "tasks.0abc12-1-a"
    assert reflog.lane_of(f"{AGENT_REFLOG_ACTION}: my subject") is None
    assert reflog.lane_of(f"{AGENT_REFLOG_ACTION} (start): checkout main") is None
    assert reflog.lane_of(AGENT_REFLOG_ACTION) is None
    assert reflog.lane_of("commit: mine") is None
