"""Landing a lane's commit on the main line: one commit each, author, date and message kept, a
compare-and-swap on the branch, idempotent after a kill, and the user's checkout followed without
sweeping in or overwriting anything of the user's."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs.git import landing_copy, mainline
from agentloop.vcs.git.behind import RECORD
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.landing import IntegrationConflict
from tests.support.repos import make_repo


def git(repo: Path, *args: str, **env: str) -> str:
    import os
    return proc.run(["git", *args], cwd=repo, env={**os.environ, **env}).stdout.strip()


def lane_commit(repo: Path, name: str, files: dict[str, str], message: str) -> str:
    """A commit on branch `name` (made in a worktree), as a lane would make it."""
    wt = repo.parent / name
    if not wt.exists():
        git(repo, "worktree", "add", "-q", "-b", name, str(wt), "main")
    for path, text in files.items():
        (wt / path).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", message, GIT_AUTHOR_NAME="Lane Agent",
        GIT_AUTHOR_DATE="2026-02-03T04:05:06+01:00")
    return git(wt, "rev-parse", "HEAD")


def test_a_commit_lands_once_with_its_author_and_message(repo: Path) -> None:
    main = GitMainLine.current(repo)
    first = lane_commit(repo, "a", {"a.txt": "a\n"}, "task a\n\nbody")
    landed = main.land(first)
    assert git(repo, "log", "-1", "--format=%an|%ad|%B", "--date=iso", landed) == \
        "Lane Agent|2026-02-03 04:05:06 +0100|task a\n\nbody"
    assert git(repo, "rev-parse", "main") == landed
    assert (repo / "a.txt").read_text() == "a\n"  # the checkout followed
    assert git(repo, "status", "--porcelain") == ""
    assert main.land(first) == landed  # a second landing (a re-run after a kill) is the same
    assert git(repo, "rev-list", "--count", "main") == "2"
    main.forget([first])
    assert git(repo, "for-each-ref", mainline.LANDED) == ""


def test_conflicts_are_reported_and_change_nothing(repo: Path) -> None:
    main = GitMainLine.current(repo)
    left = lane_commit(repo, "left", {"f.txt": "left\n"}, "left")
    right = lane_commit(repo, "right", {"f.txt": "right\n"}, "right")
    main.land(left)
    tip = main.tip()
    with pytest.raises(IntegrationConflict) as caught:
        main.land(right)
    assert caught.value.files == ("f.txt",) and caught.value.onto == tip
    assert main.tip() == tip and (repo / "f.txt").read_text() == "left\n"


def test_the_users_edits_on_the_same_file_make_it_wait(repo: Path) -> None:
    said: list[str] = []
    main = GitMainLine(repo, "refs/heads/main", on_wait=said.append)
    commit = lane_commit(repo, "a", {"f.txt": "from the task\n"}, "task")
    (repo / "f.txt").write_text("the user's edit\n")
    before = main.tip()
    done: list[str] = []
    landing = threading.Thread(target=lambda: done.append(main.land(commit)))
    landing.start()
    landing.join(2.5)
    assert not done and main.tip() == before  # the branch waits; the user's file is untouched
    assert (repo / "f.txt").read_text() == "the user's edit\n"
    assert len(said) == 1 and "f.txt" in said[0]
    git(repo, "stash", "-q")
    landing.join(10)
    assert done and (repo / "f.txt").read_text() == "from the task\n"
    assert "the user's edit" in git(repo, "stash", "show", "-p")


@pytest.mark.parametrize("where", ["look", "sleep"])
def test_a_stop_anywhere_in_a_wait_holds_the_commit(repo: Path, where: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl+C while the landing waits, in its sleep or inside the git status of a look again,
    holds the commit (the next run lands it) instead of losing it with an interrupted task."""
    from agentloop.vcs.landing import LandingHeld
    monkeypatch.setattr(mainline, "POLL_SECONDS", 0.01)
    main = GitMainLine(repo, "refs/heads/main", on_wait=lambda line: None)
    commit = lane_commit(repo, "a", {"f.txt": "from the task\n"}, "task")
    (repo / "f.txt").write_text("the user's edit\n")
    looks = 0
    busy, sleep = main._busy, mainline.time.sleep

    def look(files: list[str], new: str) -> tuple[list[str], list[str]]:
        nonlocal looks
        looks += 1
        if where == "look" and looks == 2:
            raise KeyboardInterrupt  # as git's status is running
        return busy(files, new)

    def nap(seconds: float) -> None:
        if where == "sleep":
            raise KeyboardInterrupt
        sleep(seconds)

    monkeypatch.setattr(main, "_busy", look)
    monkeypatch.setattr(mainline.time, "sleep", nap)
    with pytest.raises(LandingHeld) as held:
        main.land(commit)
    assert held.value.commit == commit and held.value.files == ("f.txt",)
    assert isinstance(held.value.stop, KeyboardInterrupt)
    assert (repo / "f.txt").read_text() == "the user's edit\n"


def test_git_failing_in_a_wait_nobody_stopped_is_not_called_a_stop(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real error while the landing waits stays that error: the task is not held as though
    the run had been stopped."""
    from agentloop.errors import VcsError
    monkeypatch.setattr(mainline, "POLL_SECONDS", 0.01)
    main = GitMainLine(repo, "refs/heads/main", on_wait=lambda line: None)
    commit = lane_commit(repo, "a", {"f.txt": "from the task\n"}, "task")
    (repo / "f.txt").write_text("the user's edit\n")
    looks = 0
    busy = main._busy

    def look(files: list[str], new: str) -> tuple[list[str], list[str]]:
        nonlocal looks
        looks += 1
        if looks == 2:
            raise VcsError("git status failed")
        return busy(files, new)

    monkeypatch.setattr(main, "_busy", look)
    with pytest.raises(VcsError, match="git status failed"):
        main.land(commit)


def test_a_stop_before_any_wait_goes_on_as_it_is(repo: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    main = GitMainLine(repo, "refs/heads/main", on_wait=lambda line: None)
    commit = lane_commit(repo, "a", {"f.txt": "from the task\n"}, "task")

    def look(files: list[str], new: str) -> tuple[list[str], list[str]]:
        raise KeyboardInterrupt

    monkeypatch.setattr(main, "_busy", look)
    with pytest.raises(KeyboardInterrupt):
        main.land(commit)


def test_unrelated_staged_and_unstaged_work_stays_as_it_is(repo: Path) -> None:
    (repo / "g.txt").write_text("g\n")
    git(repo, "add", "g.txt")
    git(repo, "commit", "-qm", "g")
    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    (repo / "g.txt").write_text("staged\n")
    git(repo, "add", "g.txt")
    (repo / "f.txt").write_text("unstaged\n")
    main.land(commit)
    assert proc.run(["git", "status", "--porcelain"], cwd=repo).stdout.splitlines() == [
        " M f.txt", "M  g.txt"]
    assert git(repo, "show", "--name-only", "--format=", "main") == "a.txt"


def test_a_branch_moved_meanwhile_is_read_again(repo: Path) -> None:
    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    old = main.tip()
    (repo / "h.txt").write_text("h\n")
    git(repo, "add", "h.txt")
    git(repo, "commit", "-qm", "the user's own commit")
    landed = main.land(commit)
    assert git(repo, "rev-parse", f"{landed}~1") != old  # on top of the user's commit
    assert git(repo, "log", "--format=%s", "main").splitlines()[:2] == [
        "task", "the user's own commit"]
    # The swap itself refuses a branch that is no longer where it was read.
    other = lane_commit(repo, "b", {"b.txt": "b\n"}, "task b")
    assert not main._swap(old, other, other) and main.tip() == landed


def test_a_lock_left_by_a_kill_is_an_error_not_a_loop(repo: Path) -> None:
    from agentloop.errors import VcsError
    from agentloop.vcs.preflight import preflight

    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    lock = repo / ".git" / "refs" / "agent-loop" / "landed" / f"{commit}.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")  # a landing killed inside its transaction
    with pytest.raises(VcsError, match="update-ref"):
        main.land(commit)
    preflight("git", repo, repo / "tasks.md")  # the next run's first step clears it
    assert not lock.exists()
    assert main.land(commit) == main.tip()


@pytest.mark.parametrize("halfway", [False, True])
def test_a_landing_killed_before_the_checkout_followed_is_mended(repo: Path,
                                                                 halfway: bool) -> None:
    from agentloop.vcs.preflight import preflight

    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n", "f.txt": "two\n"}, "task")
    old = main.tip()
    new, _ = main._replay(old, commit)
    (repo / ".git" / RECORD).write_text(f"{old} {new}\n")
    assert main._swap(old, new, commit)  # ... and killed here, before read-tree
    if halfway:  # or inside it, one file written
        (repo / "a.txt").write_text("a\n")
    assert git(repo, "status", "--porcelain") != ""
    notes = preflight("git", repo, repo / "tasks.md")
    assert any("cut short" in n for n in notes)
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "f.txt").read_text() == "two\n"
    assert not (repo / ".git" / RECORD).exists()


@pytest.mark.parametrize("written", [("a.txt",), ("a.txt", "f.txt"), ("f.txt",)])
def test_a_fast_forward_killed_before_its_index_is_mended(repo: Path,
                                                          written: tuple[str, ...]) -> None:
    """`git merge --ff-only` killed after it wrote some of the commit's files into the checkout
    and before its index (and the branch) followed: they stood there as untracked or modified
    files, and the next run's landing of that commit waited on them as on your edits."""
    from agentloop.vcs.preflight import preflight

    commit = lane_commit(repo, "a", {"a.txt": "a\n", "f.txt": "two\n"}, "task")
    old = git(repo, "rev-parse", "HEAD")
    (repo / ".git" / RECORD).write_text(f"{old} {commit}\n")
    for name in written:  # what git had written when it was killed
        (repo / name).write_text(git(repo, "show", f"{commit}:{name}") + "\n")
    (repo / ".git" / "index.lock").write_text("")
    notes = preflight("git", repo, repo / "tasks.md")
    assert any("cut short as it wrote" in n for n in notes), notes
    assert git(repo, "rev-parse", "HEAD") == commit
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "f.txt").read_text() == "two\n"
    assert GitMainLine.current(repo).land(commit) == commit  # landed: found so, no wait


def test_a_fast_forward_killed_before_its_index_leaves_your_edit_alone(repo: Path) -> None:
    """The same, but a file of the commit's holds something else now (yours): nothing moves;
    the landing waits on it as on any edit of yours."""
    from agentloop.vcs.preflight import preflight

    commit = lane_commit(repo, "a", {"a.txt": "a\n", "f.txt": "two\n"}, "task")
    old = git(repo, "rev-parse", "HEAD")
    (repo / ".git" / RECORD).write_text(f"{old} {commit}\n")
    (repo / "a.txt").write_text("a\n")
    (repo / "f.txt").write_text("mine\n")
    notes = preflight("git", repo, repo / "tasks.md")
    assert not any("cut short" in n for n in notes), notes
    assert git(repo, "rev-parse", "HEAD") == old
    assert (repo / "f.txt").read_text() == "mine\n" and (repo / "a.txt").read_text() == "a\n"
    assert not (repo / ".git" / RECORD).exists()


@pytest.mark.parametrize("nested", [False, True])
def test_the_main_line_takes_the_users_uncommitted_paths_from_the_checkouts_status(
        tmp_path: Path, nested: bool) -> None:
    # A run in lanes: the checkout's prepare read `git status` a moment ago; the main line
    # knows what the user has uncommitted from it (no second status), as its own would say.
    from agentloop.vcs.choose import open_main_line
    from agentloop.vcs.git.backend import GitVcs

    work = make_repo(tmp_path / "work", plan="- a task\n")   # tasks.md: untracked
    (work / "README.md").write_text("edited\n")
    (work / "notes.txt").write_text("the user's\n")
    if nested:  # a repository inside: git lists its folder, which the backend's status skips
        make_repo(work / "inner")
    checkout = GitVcs(work, work / "tasks.md", allow_dirty=True)
    checkout.prepare()
    main = open_main_line("git", work, checkout=checkout)
    assert main.before == GitMainLine(work, "refs/heads/main").before
    assert {"README.md", "notes.txt", "tasks.md"} <= set(main.before)
    assert ("inner/" in main.before) is nested


def test_a_branch_you_renamed_is_followed_and_one_you_deleted_is_said_in_one_line(
        repo: Path) -> None:
    """`git branch -m` with the checkout on the branch: the main line is the new name. A
    branch deleted from under it (the checkout elsewhere) stops with one line, not git's."""
    from agentloop.errors import VcsError

    main = GitMainLine.current(repo)
    old = main.ref
    tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "branch", "-m", old.removeprefix("refs/heads/"), "trunk")
    said: list[str] = []
    main.on_wait = said.append
    assert main.tip() == tip and main.ref == "refs/heads/trunk"
    assert said and "renamed to trunk" in said[0]
    git(repo, "switch", "-q", "-c", "elsewhere")
    git(repo, "branch", "-D", "trunk")
    with pytest.raises(VcsError, match="branch trunk, which this run lands its tasks on, is gone"):
        main.tip()


def test_a_checkout_switched_away_is_told_once_and_the_tasks_go_on_to_the_branch(
        repo: Path) -> None:
    """You switch to a branch of your own mid-run: the tasks still land on the run's branch
    (your checkout is yours), and the run says so once, with the command that finds them."""
    main = GitMainLine.current(repo)
    said: list[str] = []
    main.on_wait = said.append
    git(repo, "switch", "-q", "-c", "mine")
    first = main.land(lane_commit(repo, "a", {"a.txt": "a\n"}, "task a"))
    second = main.land(lane_commit(repo, "a", {"b.txt": "b\n"}, "task b"))
    assert git(repo, "log", "--format=%s", "main") == "task b\ntask a\nbase"
    assert git(repo, "rev-parse", "main") == second != first
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/mine"
    assert not (repo / "a.txt").exists()  # the checkout, on your branch, is left as it is
    assert said == ["your checkout is on mine now, not on main: the tasks go on landing on "
                    "main, where `git switch main` finds them"]


def test_objects_a_gc_pruned_mid_landing_are_one_clear_line(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent's `git gc --prune=now` in its lane, while another lane landed: the objects the
    # landing had just written and nothing named yet were pruned, and the run stopped with
    # git's own "fatal: <sha> is not a valid object" from `git commit-tree`.
    main = GitMainLine.current(repo)
    main.land(lane_commit(repo, "left", {"a.txt": "a\n"}, "left"))
    right = lane_commit(repo, "right", {"b.txt": "b\n"}, "right")
    real = landing_copy.copy_commit

    def pruned_first(root: Path, commit: str, tree: str, parent: str) -> str:
        # What git finds once a gc pruned the merged tree it had just written: no such object.
        return real(root, commit, "1" * len(tree), parent)

    monkeypatch.setattr(landing_copy, "copy_commit", pruned_first)
    tip = main.tip()
    with pytest.raises(VcsError) as caught:
        main.land(right)
    said = str(caught.value)
    assert "\n" not in said and "fatal" not in said and "commit-tree" not in said, said
    assert "gc" in said and right[:12] in said and "run again" in said, said
    assert main.tip() == tip
    monkeypatch.setattr(landing_copy, "copy_commit", real)
    assert main.land(right) != tip  # the re-run lands it


def test_a_branch_read_in_the_middle_of_its_rename_is_looked_for_again(repo: Path) -> None:
    """`git branch -m` deletes the old name before HEAD and its reflog say where it went: a
    landing that read the branch in that instant stopped the run as if it were deleted (a
    --parallel run, 1 in CI's runs). Here the branch comes back 0.2 s after it is found gone."""
    main = GitMainLine.current(repo)
    tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "--detach")
    git(repo, "update-ref", "-d", main.ref)
    later = threading.Timer(0.2, lambda: git(repo, "update-ref", main.ref, tip))
    later.start()
    try:
        assert main.tip() == tip
    finally:
        later.join()


def moved(repo: Path) -> None:
    """The main line moves on past where the lanes began (a commit of the user's)."""
    (repo / "g.txt").write_text("g\n")
    git(repo, "add", "g.txt")
    git(repo, "commit", "-qm", "yours")


def test_a_landing_whose_new_commit_a_gc_pruned_before_the_swap_lets_the_next_run_go_on(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real `git gc --prune=now` between the replay and the branch's move: the copy the
    landing made is gone. Its record stayed in the git dir, and the next run's preflight
    stopped on git's own "bad object" until it was removed by hand."""
    from agentloop.vcs.preflight import preflight

    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    moved(repo)  # the copy is not the lane's commit itself, which its branch keeps
    tip = main.tip()
    swap = main._swap

    def pruned_first(old: str, new: str, lane: str) -> bool:
        git(repo, "gc", "-q", "--prune=now")
        assert proc.run(["git", "cat-file", "-e", new], cwd=repo, check=False).returncode
        return swap(old, new, lane)

    monkeypatch.setattr(main, "_swap", pruned_first)
    with pytest.raises(VcsError) as caught:
        main.land(commit)
    said = str(caught.value)
    assert "\n" not in said and "gc" in said and commit[:12] in said, said
    assert main.tip() == tip and not (repo / "a.txt").exists()
    assert not (repo / ".git" / RECORD).exists()  # the next run is not held by it
    notes = preflight("git", repo, repo / "tasks.md")
    assert not any("cut short" in n for n in notes), notes
    assert GitMainLine.current(repo).land(commit) != tip  # the next run lands it
    assert (repo / "a.txt").read_text() == "a\n"


def test_a_landing_record_naming_a_pruned_commit_is_dropped_by_the_next_run(
        repo: Path) -> None:
    """A run killed with its landing's record in the git dir, the copy it names pruned since
    (a `git gc --prune=now`): the next run says the landing never reached the branch, drops
    the record, and goes on; the branch and your files are as they were."""
    from agentloop.vcs.preflight import preflight

    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    moved(repo)  # the copy is not the lane's commit itself, which its branch keeps
    main = GitMainLine.current(repo)
    old = main.tip()
    new, _ = main._replay(old, commit)
    (repo / ".git" / RECORD).write_text(f"{old} {new}\n")
    git(repo, "gc", "-q", "--prune=now")
    notes = preflight("git", repo, repo / "tasks.md")
    assert any(new[:12] in n and "never reached" in n for n in notes), notes
    assert not (repo / ".git" / RECORD).exists()
    assert git(repo, "rev-parse", "HEAD") == old and git(repo, "status", "--porcelain") == ""
    assert GitMainLine.current(repo).land(commit) != old


def _remove_object(repo: Path, sha: str) -> None:
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def test_a_damaged_repository_is_not_taken_for_a_gc_during_a_landing(repo: Path) -> None:
    """git's "bad object" words come from a damaged repository too: an object of the branch's
    own commit missing is not a gc's doing, and "run again" would not help."""
    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    moved(repo)  # the copy is not the lane's commit itself, which its branch keeps
    _remove_object(repo, git(repo, "rev-parse", "main^{tree}"))
    with pytest.raises(VcsError) as caught:
        main.land(commit)
    said = str(caught.value)
    assert "\n" not in said and "damaged" in said and "git fsck" in said, said
    assert "gc" not in said and "run again" not in said, said


def test_a_damaged_repository_is_not_taken_for_a_pruned_landing_by_the_next_run(
        repo: Path) -> None:
    from agentloop.vcs.preflight import preflight

    main = GitMainLine.current(repo)
    commit = lane_commit(repo, "a", {"a.txt": "a\n"}, "task")
    moved(repo)  # the copy is not the lane's commit itself, which its branch keeps
    old = main.tip()
    new, _ = main._replay(old, commit)
    record = repo / ".git" / RECORD
    record.write_text(f"{old} {new}\n")
    _remove_object(repo, new)
    _remove_object(repo, git(repo, "rev-parse", "main^{tree}"))
    with pytest.raises(VcsError) as caught:
        preflight("git", repo, repo / "tasks.md")
    said = str(caught.value)
    assert "\n" not in said and "damaged" in said and "git fsck" in said, said
    assert record.exists()  # nothing dropped while the repository is in doubt


def test_a_fast_forward_a_rename_cut_short_lands_without_waiting_on_its_own_files(
        repo: Path) -> None:
    """An agent's `git branch -m main trunk` in the middle of a landing's `git merge --ff-only`:
    git had written and staged the task's file in your checkout, then the branch did not move.
    The landing taken again waited on that file as on an edit of yours, for as long as a person
    takes (a --parallel run stalled, 1 in 40)."""
    from agentloop.vcs.landing import LandingHeld

    commit = lane_commit(repo, "a", {"two.txt": "two\n"}, "task")
    old = git(repo, "rev-parse", "HEAD")
    git(repo, "read-tree", "-m", "-u", old, commit)  # what the cut-short merge left
    git(repo, "branch", "-m", "main", "trunk")
    main = GitMainLine(repo, "refs/heads/main", wait_limit=1.0)
    try:
        landed = main.land(commit, parent=old)
    except LandingHeld as held:
        pytest.fail(f"the landing waited on its own file: {held}")
    assert git(repo, "rev-parse", "trunk") == landed and git(repo, "show", "trunk:two.txt") == "two"
    assert git(repo, "status", "--porcelain") == ""


def test_a_branch_renamed_just_before_the_landing_moves_it_is_read_again_not_called_damaged(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rename between the landing's read of the branch and its move: the move met no
    branch of the old name and the run stopped, exit 1, saying this repository's git objects
    were damaged (branch main missing)."""
    commit = lane_commit(repo, "a", {"two.txt": "two\n"}, "task")
    main = GitMainLine.current(repo)
    replay = main._replay

    def renamed_after(*args: object) -> tuple[str, list[str]]:
        done = replay(*args)  # type: ignore[arg-type]
        if git(repo, "branch", "--list", "main"):
            git(repo, "branch", "-m", "main", "trunk")
        return done

    monkeypatch.setattr(main, "_replay", renamed_after)
    landed = main.land(commit)
    assert git(repo, "rev-parse", "trunk") == landed and git(repo, "show", "trunk:two.txt") == "two"
    assert git(repo, "status", "--porcelain") == ""
