"""Lane working copies: a git worktree or jj workspace per group, made from the main line, reused
after a crash whatever state it was left in, and cleaned without losing a commit."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs import lanes
from agentloop.vcs.git import refs, registration, teardown, worktree_list
from agentloop.vcs.git import worktrees as wt
from agentloop.vcs.jj import workspaces as jw
from tests.support.repos import make_repo


def git(repo: Path, *args: str) -> str:
    return proc.run(["git", *args], cwd=repo).stdout.strip()


def jj(repo: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", *args], cwd=repo).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo", "git", {"a.txt": "a\n"}, message="base")
    (root / ".agent-loop").mkdir()
    (root / ".agent-loop" / ".gitignore").write_text("*\n")
    return root


def test_lane_names_are_safe() -> None:
    assert lanes.lane_name(2, "Backend API / v2") == "2-backend-api-v2"
    assert lanes.lane_name(3, "???") == "3"


def test_git_lane_from_main_line_on_its_own_branch(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "1-setup", base, fresh=True)
    assert lane.path == (repo / ".agent-loop" / "lanes" / "1-setup").resolve()
    assert (lane.path / "a.txt").read_text() == "a\n"
    assert git(lane.path, "rev-parse", "--abbrev-ref", "HEAD") == "agent-loop/1-setup"
    assert git(repo, "status", "--porcelain") == ""  # the main checkout sees nothing of it
    (lane.path / "b.txt").write_text("b\n")
    git(lane.path, "add", "b.txt")
    git(lane.path, "commit", "-qm", "task")
    again = wt.open_git(repo, "1-setup", base, fresh=False)
    assert again.reused and (again.path / "b.txt").exists()
    teardown.remove_git(repo, again)
    assert not again.path.exists()
    assert git(repo, "branch", "--list", "agent-loop/1-setup")  # the branch stays
    # Made again from the branch: its commit is still there.
    back = wt.open_git(repo, "1-setup", base, fresh=False)
    assert (back.path / "b.txt").exists()
    # A fresh start moves the branch to base, keeping the old tip under a ref of its own.
    tip = git(repo, "rev-parse", "agent-loop/1-setup")
    fresh = wt.open_git(repo, "1-setup", base, fresh=True)
    assert not (fresh.path / "b.txt").exists()
    assert git(repo, "rev-parse", "refs/agent-loop/previous/1-setup") == tip
    teardown.remove_git(repo, fresh, drop_branch=True)
    assert not git(repo, "branch", "--list", "agent-loop/1-setup")


def test_git_leftovers_of_a_crash_are_cleaned(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "2-api", base, fresh=True)
    (lane.path / "c.txt").write_text("c\n")
    git(lane.path, "add", "c.txt")
    git(lane.path, "commit", "-qm", "kept")
    # Folder deleted behind git's back: registered but prunable.
    import shutil
    shutil.rmtree(lane.path)
    back = wt.open_git(repo, "2-api", base, fresh=False)
    assert (back.path / "c.txt").exists()
    # Locked mid-add ("initializing", as a kill inside `worktree add` leaves it).
    git(repo, "worktree", "lock", "--reason", "initializing", str(back.path))
    again = wt.open_git(repo, "2-api", base, fresh=False)
    assert (again.path / "c.txt").exists()
    assert "locked" not in worktree_list.git_worktrees(repo)[again.path]
    # A stray folder with no registration, and an old lane the plan no longer has.
    stray = lanes.lanes_dir(repo) / "9-old"
    stray.mkdir()
    (stray / "junk").write_text("x")
    assert teardown.sweep_git(repo, keep={"2-api"}) == ["9-old"]
    assert again.path.exists() and not stray.exists()
    assert teardown.sweep_git(repo, keep=set()) == ["2-api"]
    assert git(repo, "worktree", "list").count("\n") == 0  # only the main worktree
    assert git(repo, "log", "-1", "--format=%s", "agent-loop/2-api") == "kept"


def test_a_whole_git_lane_is_removed_from_its_files_as_git_would(repo: Path) -> None:
    from agentloop.vcs.git.repo import GitRepo
    from agentloop.vcs.git.run import Git

    # As a run does first: git's answer says no hooks folder is set anywhere but its own.
    assert GitRepo(Git(repo)).locate()
    base = git(repo, "rev-parse", "HEAD")
    one = wt.open_git(repo, "1-one", base, fresh=True)
    two = wt.open_git(repo, "2-two", base, fresh=True)
    (two.path / "left.txt").write_text("nobody committed me\n")
    main = git(repo, "symbolic-ref", "HEAD")
    calls = proc.started()
    teardown.remove_git(repo, one, drop_branch=True, main=main)
    # Its status (nothing uncommitted there) alone: no `worktree remove`, and its branch (the
    # files say it is where the main line is) deleted from its files, reflog and all.
    assert proc.started() - calls == 1
    assert not one.path.exists() and not git(repo, "branch", "--list", "agent-loop/1-one")
    assert not (repo / ".git" / "logs" / "refs" / "heads" / "agent-loop" / "1-one").exists()
    assert "agent-loop/1-one" not in git(repo, "for-each-ref")
    assert (repo / ".git" / "refs" / "heads" / "agent-loop" / "2-two").is_file()
    assert (repo / ".git" / "worktrees").is_dir()  # the other lane's folder is there still
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 2
    teardown.remove_git(repo, two, drop_branch=True)
    assert git(repo, "show", "refs/agent-loop/kept-files/2-two:left.txt") == "nobody committed me"
    assert not (repo / ".git" / "worktrees").exists()  # with the last one, as git does
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    git(repo, "worktree", "prune")  # git finds nothing left to prune: no folder of it stays
    assert not (repo / ".git" / "worktrees").exists()


@pytest.mark.parametrize("how", ["packed", "configured", "checked out", "rebasing"])
def test_a_lane_branch_the_files_do_not_say_all_of_goes_by_git(repo: Path, how: str) -> None:
    # Where deleting the ref's file would not be all `git branch -D` does, git does it.
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "1-one", base, fresh=True)
    main = git(repo, "symbolic-ref", "HEAD")
    if how == "packed":
        git(repo, "pack-refs", "--all")
    elif how == "configured":
        git(repo, "config", "branch.agent-loop/1-one.description", "mine")
    teardown.remove_git(repo, lane, drop_branch=False)
    if how == "checked out":
        git(repo, "worktree", "add", "-q", str(repo.parent / "other"), "agent-loop/1-one")
    elif how == "rebasing":  # as git leaves a rebase stopped on the branch: HEAD detached
        (repo / ".git" / "rebase-merge").mkdir()
        (repo / ".git" / "rebase-merge" / "head-name").write_text("refs/heads/agent-loop/1-one\n")
    calls = proc.started()
    teardown.drop_branches(repo, {"1-one"}, main)
    assert proc.started() - calls == 1  # its `branch -D`
    branches = git(repo, "branch", "--list", "agent-loop/1-one")
    assert bool(branches) == (how in ("checked out", "rebasing"))  # git refuses, as ever
    if how == "configured":
        assert "agent-loop/1-one" not in git(repo, "config", "--list")


def test_a_lane_branch_goes_by_git_when_refs_are_being_packed(repo: Path) -> None:
    """The branch's ref file is not unlinked while a `git pack-refs` (or `gc --auto`) is under
    way, which writes packed-refs back with the branch in it: `git branch -D` waits, fails."""
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "1-one", base, fresh=True)
    main = git(repo, "symbolic-ref", "HEAD")
    teardown.remove_git(repo, lane, drop_branch=False)
    (repo / ".git" / "packed-refs.lock").write_text("")
    calls = proc.started()
    teardown.drop_branches(repo, {"1-one"}, main)
    assert proc.started() - calls == 1  # its `branch -D`
    assert (repo / ".git" / "refs" / "heads" / "agent-loop" / "1-one").is_file()


def _config_file(where: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                 ) -> None:
    """`text` in git's XDG or system config file (one of this test's, named by the
    environment), the global one set aside for the XDG file as git reads it."""
    if where == "xdg":
        monkeypatch.delenv("GIT_CONFIG_GLOBAL")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        (tmp_path / "xdg" / "git").mkdir(parents=True)
        (tmp_path / "xdg" / "git" / "config").write_text(text)
    else:
        monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
        monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "system"))
        (tmp_path / "system").write_text(text)


@pytest.mark.parametrize("where", ["repository", "global", "included", "xdg", "system",
                                   "environment", "git -c"])
def test_a_lane_branch_goes_from_its_files_whatever_hooks_are_set(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A reference-transaction hook, in the repository's hooks or a hooks folder set anywhere
    (your global or system config, the environment): agent-loop's own git runs none
    (agentloop.vcs.git.run.GUARD), so its `git branch -D` is the unlink of the branch's files,
    which costs no process. It went by git, to tell the hook, before."""
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "1-one", base, fresh=True)
    main = git(repo, "symbolic-ref", "HEAD")
    teardown.remove_git(repo, lane, drop_branch=False)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    told = tmp_path / "told"
    hook = (repo / ".git" / "hooks" if where == "repository" else hooks) / "reference-transaction"
    hook.write_text(f"#!/bin/sh\necho \"$1\" >> '{told}'\ncat >/dev/null\n")
    hook.chmod(0o755)
    setting = f"[core]\n\thooksPath = {hooks}\n"
    if where == "global":
        monkeypatch.delenv("GIT_CONFIG_GLOBAL")
        (Path(os.environ["HOME"]) / ".gitconfig").write_text(setting)
    elif where == "included":   # the global file names another that holds it
        monkeypatch.delenv("GIT_CONFIG_GLOBAL")
        (tmp_path / "more").write_text(setting)
        (Path(os.environ["HOME"]) / ".gitconfig").write_text(
            f"[includeIf \"gitdir:{repo}/\"]\n\tpath = {tmp_path / 'more'}\n")
    elif where in ("xdg", "system"):
        _config_file(where, setting, tmp_path, monkeypatch)
    elif where == "environment":
        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(hooks))
    elif where == "git -c":
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.hookspath'='{hooks}'")
    calls = proc.started()
    teardown.drop_branches(repo, {"1-one"}, main)
    assert proc.started() - calls == 0
    assert not (repo / ".git" / "refs" / "heads" / "agent-loop" / "1-one").exists()
    assert not git(repo, "branch", "--list", "agent-loop/1-one")
    assert not told.exists(), told.read_text()


def test_a_kill_inside_a_lanes_removal_leaves_what_the_next_run_cleans(repo: Path) -> None:
    import shutil
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "3-killed", base, fresh=True)
    shutil.rmtree(lane.path)  # the first of the two folders gone, as a kill after it leaves
    assert "prunable" in worktree_list.git_worktrees(repo)[lane.path]
    back = wt.open_git(repo, "3-killed", base, fresh=False)
    assert (back.path / "a.txt").exists()
    assert "prunable" not in worktree_list.git_worktrees(repo)[back.path]


class Killed(BaseException):
    """A kill at this point: nothing after it runs."""


def cut_short(monkeypatch: pytest.MonkeyPatch, repo: Path, name: str) -> Path:
    """Lane `name`, with a file nobody committed, its removal killed after it deleted a.txt."""
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, name, base, fresh=True)
    (lane.path / "mine.txt").write_text("nobody committed me\n")

    rmtree = shutil.rmtree

    def killed(path: Path, *args: Any, **kwargs: Any) -> None:
        if Path(path) != lane.path:
            return rmtree(path, *args, **kwargs)   # a scratch folder of the removal's
        (lane.path / "a.txt").unlink()
        raise Killed

    monkeypatch.setattr(shutil, "rmtree", killed)
    with pytest.raises(Killed):
        teardown.remove_git(repo, lane, drop_branch=True)
    monkeypatch.undo()
    assert not (lane.path / "a.txt").exists() and (lane.path / ".git").is_file()
    return lane.path


def test_a_lane_whose_removal_a_kill_cut_short_is_swept_as_what_it_is(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cut_short(monkeypatch, repo, "4-cut")
    kept = git(repo, "rev-parse", "refs/agent-loop/kept-files/4-cut")
    gone, _, notes = teardown.swept_git(repo, keep=set())
    assert gone == ["4-cut"] and not path.exists()
    assert notes == ["removed lane 4-cut, whose removal a kill had cut short: nothing of yours "
                     "was left in it (what nobody had committed there was kept first)"]
    # What the removal deleted is no one's work: the files kept before it stay what is kept.
    assert git(repo, "rev-parse", "refs/agent-loop/kept-files/4-cut") == kept
    assert git(repo, "show", f"{kept}:a.txt") == "a"
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_lane_whose_removal_a_kill_cut_short_is_made_whole_to_work_in(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cut_short(monkeypatch, repo, "5-serial")
    back = wt.open_git(repo, "5-serial", git(repo, "rev-parse", "HEAD"), fresh=False)
    assert back.path == path and (path / "a.txt").read_text() == "a\n"
    assert not (path / "mine.txt").exists()   # kept under refs/agent-loop/kept-files/
    assert git(back.path, "status", "--porcelain") == ""


def test_jj_lane_workspace(tmp_path: Path, jj_bin: str) -> None:
    root = tmp_path / "jrepo"
    root.mkdir()
    jj(root, "git", "init")
    (root / ".agent-loop").mkdir()
    (root / ".agent-loop" / ".gitignore").write_text("*\n")
    (root / "a.txt").write_text("a\n")
    jj(root, "commit", "-m", "base")
    lane = jw.open_jj(root, "1-setup", "@-", fresh=True)
    assert lane.branch == "agent-loop-1-setup"
    assert (lane.path / "a.txt").exists()
    # The one mapping back from a workspace's name to its lane, the folder open_jj made.
    assert jw.lane_of(lane.branch) == "1-setup" and jw.lane_of("default") is None
    assert jw.lane_folder(root, lane.branch).resolve() == lane.path
    assert jw.lane_folder(root, "default") is None
    (lane.path / "b.txt").write_text("b\n")
    jj(lane.path, "commit", "-m", "lane work")
    assert jw.open_jj(root, "1-setup", "@-", fresh=False).reused
    # The folder deleted without forget: the name would stay taken; opening cleans it up.
    import shutil
    shutil.rmtree(lane.path)
    back = jw.open_jj(root, "1-setup", "@-", fresh=False)
    assert not back.reused and (back.path / "a.txt").exists()
    assert "lane work" in jj(root, "log", "-r", "all()", "-T", 'description ++ "\\n"')
    assert jw.sweep_jj(root, keep=set()) == ["1-setup"]
    assert jw.jj_workspaces(root) == {"default"}
    assert "lane work" in jj(root, "log", "-r", "all()", "-T", 'description ++ "\\n"')


def test_a_sweep_leaves_other_copies_alone(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    rehearsal = wt.open_git(repo, "rehearsal-tasks-md", base, fresh=True)
    old = wt.open_git(repo, "3-old", base, fresh=True)
    assert teardown.sweep_git(repo, keep=set(), known={"1-a", "3-old"}) == ["3-old"]
    assert rehearsal.path.exists() and not old.path.exists()


def _git_started(trace: Path) -> list[str]:
    return [line.split("trace: built-in: ", 1)[1] for line in trace.read_text().splitlines()
            if "trace: built-in: " in line]


def test_a_git_lane_is_made_with_one_git_process(repo: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted off git's own trace, which names the processes git starts itself as well: the
    # registration is written as `worktree add --detach --no-checkout` writes it (that command
    # and the `update-ref` it starts were two more; `worktree add -B` was four: it starts
    # `branch`, `symbolic-ref` and `reset --hard`), then the one `checkout -f -B`.
    trace = tmp_path / "git.trace"
    base = git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv("GIT_TRACE", str(trace))
    # The repository's worktrees as the sweep just listed them (none): the making alone.
    lane = wt.open_git(repo, "1-made", base, fresh=True, registered={})
    monkeypatch.delenv("GIT_TRACE")
    started = _git_started(trace)
    assert len(started) == 1 and " checkout " in started[0], started
    # Whole, on its branch at base, unlocked, nothing uncommitted in it.
    assert git(lane.path, "symbolic-ref", "HEAD") == "refs/heads/agent-loop/1-made"
    assert git(lane.path, "rev-parse", "HEAD") == base
    assert git(lane.path, "status", "--porcelain") == ""
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path]
    # git's own files for a worktree, as `worktree add` writes them: its own next to it.
    theirs = lanes.lanes_dir(repo).resolve() / "by-git"
    git(repo, "worktree", "add", "-q", "--detach", str(theirs), base)
    own, made = repo / ".git" / "worktrees" / "1-made", repo / ".git" / "worktrees" / "by-git"
    assert (lane.path / ".git").read_text() == \
        (theirs / ".git").read_text().replace("by-git", "1-made")
    for name in ("gitdir", "commondir"):
        assert (own / name).read_text() == (made / name).read_text().replace("by-git", "1-made")
    git(repo, "worktree", "prune")  # git finds nothing to prune: the registration is whole
    assert git(lane.path, "rev-parse", "--git-common-dir") == str((repo / ".git").resolve())
    git(repo, "worktree", "remove", "-f", str(theirs))
    # A branch that exists is moved to base, as `worktree add -B` moved it.
    teardown.remove_git(repo, lane)
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "b")
    again = wt.open_git(repo, "1-made", git(repo, "rev-parse", "HEAD"), fresh=True)
    assert (again.path / "b.txt").exists() and git(again.path, "status", "--porcelain") == ""


@pytest.mark.parametrize("why", [
    "an extension", "sparse-checkout", "taken name", "a shared repository",
    "relative paths here", "relative paths in the global config",
    "relative paths in the XDG config", "relative paths in the system config",
    "relative paths by git -c", "relative paths in a file the global config includes",
    "relative paths in a file git -c includes"])
def test_a_git_lane_is_left_to_worktree_add_where_the_files_cannot_say_it_all(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest, why: str) -> None:
    # A repository extension (per-worktree config here; reftable refs, relative paths),
    # sparse-checkout patterns (git copies them), a worktree folder of that name there already
    # (git takes `name1`), a shared repository (git makes its folders group-writable),
    # worktree.useRelativePaths (git >= 2.48 writes relative paths) set in any config file git
    # reads: git's own `worktree add` registers the lane, with what it writes.
    base = git(repo, "rev-parse", "HEAD")
    relative = "[worktree]\n\tuseRelativePaths = true\n"
    if why == "an extension":
        git(repo, "config", "extensions.worktreeConfig", "true")
    elif why == "a shared repository":
        git(repo, "config", "core.sharedRepository", "group")
        previous = os.umask(0o022)  # what makes the group-writable folders git's
        request.addfinalizer(lambda: os.umask(previous))
    elif why == "relative paths here":
        git(repo, "config", "worktree.useRelativePaths", "true")
    elif why == "relative paths in the global config":
        with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as config:
            config.write(relative)
    elif why == "relative paths in a file the global config includes":
        (tmp_path / "included").write_text(relative)
        with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as config:
            config.write(f"[include]\n\tpath = {tmp_path / 'included'}\n")
    elif why == "relative paths in a file git -c includes":
        (tmp_path / "included").write_text(relative)
        for name, value in (("COUNT", "1"), ("KEY_0", "include.path"),
                            ("VALUE_0", str(tmp_path / "included"))):
            monkeypatch.setenv(f"GIT_CONFIG_{name}", value)
    elif why == "relative paths in the XDG config":
        _config_file("xdg", relative, tmp_path, monkeypatch)
    elif why == "relative paths in the system config":
        _config_file("system", relative, tmp_path, monkeypatch)
    elif why == "relative paths by git -c":
        for name, value in (("COUNT", "1"), ("KEY_0", "worktree.useRelativePaths"),
                            ("VALUE_0", "true")):
            monkeypatch.setenv(f"GIT_CONFIG_{name}", value)
    elif why == "sparse-checkout":
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "sparse-checkout").write_text("/*\n")
    else:
        (repo / ".git" / "worktrees" / "1-left").mkdir(parents=True)
        (repo / ".git" / "worktrees" / "1-left" / "locked").write_text("someone's")
    trace = tmp_path / "git.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    lane = wt.open_git(repo, "1-left", base, fresh=True, registered={})
    monkeypatch.delenv("GIT_TRACE")
    started = _git_started(trace)
    assert len(started) == 3 and " worktree add " in started[0], started
    if why == "a shared repository":  # as git makes it: group-writable
        assert (repo / ".git" / "worktrees").stat().st_mode & 0o020
    assert git(lane.path, "symbolic-ref", "HEAD") == "refs/heads/agent-loop/1-left"
    assert git(lane.path, "status", "--porcelain") == ""
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path]


@pytest.mark.parametrize("cut", ["after the add", "after the checkout"])
def test_a_git_lane_whose_making_a_kill_cut_short_is_made_again(repo: Path, cut: str) -> None:
    """A kill while a lane is made leaves it locked (registered, detached and empty; or on its
    branch with its files, the lock not yet gone): the next run cleans it and makes it again,
    never works in it as it is."""
    base = git(repo, "rev-parse", "HEAD")
    path = lanes.lanes_dir(repo).resolve() / "1-cut"
    path.parent.mkdir(parents=True)
    git(repo, "worktree", "add", "-q", "--lock", "--detach", "--no-checkout", str(path), base)
    if cut == "after the checkout":
        git(path, "checkout", "-q", "-f", "-B", "agent-loop/1-cut", base)
    lane = wt.open_git(repo, "1-cut", base, fresh=False)
    assert (lane.path / "a.txt").read_text() == "a\n"
    assert git(lane.path, "symbolic-ref", "HEAD") == "refs/heads/agent-loop/1-cut"
    assert git(lane.path, "status", "--porcelain") == ""
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path]


def test_a_git_lane_of_a_repository_with_submodules_is_made_as_worktree_add_made_it(
        repo: Path, tmp_path: Path) -> None:
    # submodule.recurse on: the lane's checkout leaves the submodules alone, as `worktree add`
    # does (the new worktree has none of their repositories).
    sub = make_repo(tmp_path / "sub", "git", {"s.txt": "s\n"}, message="sub")
    proc.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub),
              "sub"], cwd=repo)
    git(repo, "commit", "-qm", "with a submodule")
    git(repo, "config", "submodule.recurse", "true")
    lane = wt.open_git(repo, "1-sub", git(repo, "rev-parse", "HEAD"), fresh=True)
    assert (lane.path / "a.txt").exists() and (lane.path / "sub").is_dir()
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path]


@pytest.mark.parametrize("empty", ["commondir", "gitdir"])
def test_a_lane_registration_a_kill_left_half_written_is_dropped(repo: Path, empty: str) -> None:
    """git writes a new worktree's files one by one after its lock; killed between opening one
    and writing it (seen in the kill sweep), it leaves the file empty and every `git worktree
    list` fails. The next run drops that lane's registration and makes the lane again."""
    base = git(repo, "rev-parse", "HEAD")
    path = lanes.lanes_dir(repo).resolve() / "1-half"
    path.mkdir(parents=True)
    own = repo / ".git" / "worktrees" / "1-half"
    own.mkdir(parents=True)
    (own / "locked").write_text("initializing")
    (own / "HEAD").write_text("0" * 40 + "\n")
    (own / "gitdir").write_text(f"{path}/.git\n")
    (own / "commondir").write_text("../..\n")
    (own / empty).write_text("")
    (path / ".git").write_text(f"gitdir: {own}\n")
    lane = wt.open_git(repo, "1-half", base, fresh=True)
    assert (lane.path / "a.txt").read_text() == "a\n"
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path]
    if empty == "gitdir":
        return  # git lists that one (prunable) and the lane was cleaned as such
    # Someone else's broken registration is not ours to drop: git's own error is said.
    other = repo / ".git" / "worktrees" / "elsewhere"
    shutil.copytree(own, other)
    (other / "locked").write_text("initializing")
    (other / empty).write_text("")
    with pytest.raises(Exception, match="worktree list"):
        worktree_list.git_worktrees(repo)


def test_a_half_made_lane_of_a_live_run_is_left_to_it(repo: Path) -> None:
    """Another agent-loop caught inside its own `git worktree add` has a registration that looks
    half-made (locked, commondir empty): its lock names its pid, alive, so it is not deleted;
    the same registration of a pid that is gone is repaired."""
    import subprocess

    path = lanes.lanes_dir(repo).resolve() / "1-busy"
    path.mkdir(parents=True)
    own = repo / ".git" / "worktrees" / "1-busy"
    own.mkdir(parents=True)
    # A live process started as agent-loop is, its program a script of that name.
    program = repo.parent / "bin" / "agent-loop"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nsleep 60\n")
    program.chmod(0o755)
    busy = subprocess.Popen(["/bin/sh", str(program)])
    try:
        (own / "locked").write_text(f"agent-loop {busy.pid}")
        (own / "HEAD").write_text("0" * 40 + "\n")
        (own / "gitdir").write_text(f"{path}/.git\n")
        (own / "commondir").write_text("")
        with pytest.raises(VcsError, match=f"worktree list.*printf '../..\\\\n' > {own}/commondir"):
            worktree_list.git_worktrees(repo)
        assert own.is_dir()
    finally:
        busy.kill()
        busy.wait()
    gone = subprocess.Popen(["true"])
    gone.wait()
    (own / "locked").write_text(f"agent-loop {gone.pid}")
    worktree_list.git_worktrees(repo)
    assert not own.exists()


def test_a_half_made_lane_whose_pid_is_another_programs_now_is_repaired(repo: Path) -> None:
    """After a restart (a container's) the pid a half-made registration's lock names is alive
    again, some other program's (PID 1, say): its run is gone, so the registration is repaired,
    not left to stop every later run at `git worktree list`."""
    import subprocess

    base = git(repo, "rev-parse", "HEAD")
    path = lanes.lanes_dir(repo).resolve() / "1-reused"
    path.mkdir(parents=True)
    own = repo / ".git" / "worktrees" / "1-reused"
    own.mkdir(parents=True)
    other = subprocess.Popen(["sleep", "60"])
    try:
        (own / "locked").write_text(f"agent-loop {other.pid}")
        (own / "HEAD").write_text("0" * 40 + "\n")
        (own / "gitdir").write_text(f"{path}/.git\n")
        (own / "commondir").write_text("")
        lane = wt.open_git(repo, "1-reused", base, fresh=True)
    finally:
        other.kill()
        other.wait()
    assert (lane.path / "a.txt").read_text() == "a\n"
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path]


def test_a_lane_let_go_is_looked_at_without_writing_its_index(repo: Path) -> None:
    # What a lane holds uncommitted is asked once as it goes (teardown.keep_files): a look
    # only, its index not written back. Right after a commit its files are racily clean, and a
    # plain `git status` took the lane's index.lock to write the whole index again, on the way
    # out of the run after its last agent.
    lane = wt.open_git(repo, "1-look", git(repo, "rev-parse", "HEAD"), fresh=True)
    for n in range(20):
        (lane.path / f"n{n}.txt").write_text(f"{n}\n")
    git(lane.path, "add", "-A")
    git(lane.path, "commit", "-qm", "work")
    own = refs.worktree_git_dir(lane.path)
    assert own is not None
    index = own / "index"
    # Racily clean for certain: the index no newer than the files it holds.
    os.utime(index, ns=(os.stat(index).st_atime_ns, os.stat(lane.path / "n0.txt").st_mtime_ns))
    before = os.stat(index)
    assert teardown.keep_files(repo, lane.path, "1-look") is None
    after = os.stat(index)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize("cut", ["after the lock", "after the folder", "inside gitdir"])
def test_a_lane_registration_a_kill_left_without_its_gitdir_is_made_again(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: str) -> None:
    """A kill while a lane's registration is written from files (wt._registered), after its
    folder in the repository and its lock and before its `gitdir`: git lists no such worktree
    and `git worktree prune` never takes it (locked). The lock names a run that is gone, so the
    next run deletes it and makes the lane there, from files: one lane, not `<name>1` beside a
    leftover every later run would step around."""
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    base = git(repo, "rev-parse", "HEAD")
    path = lanes.lanes_dir(repo).resolve() / "1-cut"
    own = repo / ".git" / "worktrees" / "1-cut"
    own.mkdir(parents=True)
    (own / "locked").write_text(f"agent-loop {gone.pid}")
    if cut != "after the lock":
        path.mkdir(parents=True)
    if cut == "inside gitdir":
        (own / "gitdir").write_text("")
    trace = tmp_path / "git.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    lane = wt.open_git(repo, "1-cut", base, fresh=True)
    monkeypatch.delenv("GIT_TRACE")
    assert " worktree add " not in "".join(_git_started(trace))
    assert lane.path == path and (path / "a.txt").read_text() == "a\n"
    assert sorted(p.name for p in (repo / ".git" / "worktrees").iterdir()) == ["1-cut"]
    listed = worktree_list.git_worktrees(repo)
    assert sorted(listed) == sorted([repo.resolve(), path])
    assert "locked" not in listed[path] and "prunable" not in listed[path]
    git(repo, "worktree", "prune")
    assert (own / "gitdir").read_text() == f"{path / '.git'}\n"


def test_a_registration_that_fails_leaves_a_folder_someone_else_made(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The lane's folder made by someone else after the look that it is not there: the
    # registration fails (the folder is there) and deletes what it made, not that folder.
    base = git(repo, "rev-parse", "HEAD")
    path = lanes.lanes_dir(repo).resolve() / "1-race"
    path.mkdir(parents=True)
    (path / "theirs.txt").write_text("theirs\n")
    real = Path.exists
    with monkeypatch.context() as patch:
        patch.setattr(Path, "exists",
                      lambda self, *a, **k: False if self == path else real(self, *a, **k))
        assert not wt._registered(repo, path, base, "agent-loop 1")
    assert (path / "theirs.txt").read_text() == "theirs\n"
    assert not (repo / ".git" / "worktrees" / "1-race").exists()


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_something_not_a_lane_where_a_lane_goes_is_said_and_left(
        repo: Path, tmp_path: Path, kind: str) -> None:
    """A plain file, or a symlink (dangling or not), in agent-loop's lanes folder under a lane's
    name is not a lane of ours: one line names it and says to move it away, before any lane is
    swept or made. The file stays; a symlink is never followed (git made its target elsewhere
    and registered a worktree there; a file made clean_git's rmtree fail)."""
    from agentloop.vcs.choose import sweep_workspaces

    base = git(repo, "rev-parse", "HEAD")
    folder = lanes.lanes_dir(repo)
    folder.mkdir(parents=True)
    entry = folder / "1-odd"
    target = tmp_path / "elsewhere" / "x"
    if kind == "file":
        entry.write_text("mine\n")
    else:
        entry.symlink_to(target)
    for step in (lambda: sweep_workspaces("git", repo, set(), {"1-odd"}),
                 lambda: wt.open_git(repo, "1-odd", base, fresh=True)):
        with pytest.raises(VcsError, match=f"{entry} is a {kind}.*move it away") as said:
            step()
        assert "\n" not in str(said.value)
    assert entry.is_symlink() if kind == "symlink" else entry.read_text() == "mine\n"
    assert not target.exists() and not (tmp_path / "elsewhere").exists()
    assert list(worktree_list.git_worktrees(repo)) == [repo.resolve()]


@pytest.mark.parametrize("damage", ["commondir", "registration"])
def test_a_lane_git_no_longer_takes_for_a_repository_is_a_vcs_error(
        repo: Path, damage: str) -> None:
    """A lane whose registration an agent damaged between two steps (its commondir rewritten, or
    the registration removed) is opened in-process as a VcsError, one line, not GitPython's own
    exception, which reached the user as an internal error (rc 3)."""
    from agentloop.vcs.git.repo import open_repo

    lane = wt.open_git(repo, "1-gone", git(repo, "rev-parse", "HEAD"), fresh=True)
    own = refs.worktree_git_dir(lane.path)
    assert own is not None
    if damage == "commondir":
        (own / "commondir").write_text("../../../nonexist\n")
    else:
        shutil.rmtree(own)
    with pytest.raises(VcsError, match="no longer takes .* for a repository") as said:
        open_repo(lane.path)
    assert "\n" not in str(said.value)


def test_a_symlink_in_the_lanes_folder_never_has_its_target_swept(repo: Path,
                                                                  tmp_path: Path) -> None:
    """A symlink under a name no lane has, whose target folder bears a lane's name: the sweep
    resolved the folder's entries and removed that target, a folder of yours elsewhere."""
    yours = tmp_path / "yours" / "1-api"
    yours.mkdir(parents=True)
    (yours / "work.txt").write_text("mine\n")
    folder = lanes.lanes_dir(repo)
    folder.mkdir(parents=True)
    (folder / "foo").symlink_to(yours)
    teardown.sweep_git(repo, keep=set())
    assert (yours / "work.txt").read_text() == "mine\n"


def test_a_commondir_an_agent_made_a_symlink_is_replaced_not_written_through(
        repo: Path, tmp_path: Path) -> None:
    """An agent's `ln -sf ~/.bashrc .git/worktrees/<lane>/commondir`: the repair writes git's
    `../..` in the registration, never into the file the link names."""
    lane = wt.open_git(repo, "1-link", git(repo, "rev-parse", "HEAD"), fresh=True)
    own = refs.worktree_git_dir(lane.path)
    assert own is not None
    yours = tmp_path / "bashrc"
    yours.write_text("export PS1=mine\n")
    (own / "commondir").unlink()
    (own / "commondir").symlink_to(yours)
    assert registration.commondir_mended(own, repo / ".git") is not None
    assert yours.read_text() == "export PS1=mine\n"
    assert not (own / "commondir").is_symlink()
    assert (own / "commondir").read_text() == "../..\n"


def test_a_lane_you_locked_is_left_as_it_is_ignored_files_and_all(repo: Path) -> None:
    # `git worktree lock` says "keep this": its group done, the lane stays, since its ignored
    # files (a .env, a build) would go with it, in no commit to keep them in.
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.env\n")
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "1-mine", base, fresh=True)
    (lane.path / "secrets.env").write_text("TOKEN=1\n")
    git(repo, "worktree", "lock", "--reason", "my experiment", str(lane.path))
    notes = teardown.remove_git(repo, lane, drop_branch=True)
    assert (lane.path / "secrets.env").read_text() == "TOKEN=1\n"
    assert git(repo, "branch", "--list", "agent-loop/1-mine")
    assert len(notes) == 1 and "is locked ('my experiment')" in notes[0], notes
    assert f"git worktree unlock {lane.path}" in notes[0]
    # an earlier run's lane, swept: left too, and not said gone
    assert teardown.sweep_git(repo, keep=set()) == []
    assert (lane.path / "secrets.env").is_file()
    git(repo, "worktree", "unlock", str(lane.path))
    assert teardown.sweep_git(repo, keep=set()) == ["1-mine"] and not lane.path.exists()


@pytest.mark.parametrize("how", ["under a name git chose", "locked by you"])
def test_a_damaged_registration_is_found_by_its_lane_and_repaired(repo: Path, how: str) -> None:
    # git names a registration `1-lane1` when `1-lane` is taken; a lane you locked is yours,
    # not one half made: both were passed over, and the lane stayed broken for git.
    if how == "under a name git chose":
        (repo / ".git" / "worktrees" / "1-lane").mkdir(parents=True)
        (repo / ".git" / "worktrees" / "1-lane" / "locked").write_text("someone's")
    lane = wt.open_git(repo, "1-lane", git(repo, "rev-parse", "HEAD"), fresh=True)
    own = refs.worktree_git_dir(lane.path)
    assert own is not None
    if how == "under a name git chose":
        assert own.name == "1-lane1"
    else:
        git(repo, "worktree", "lock", "--reason", "mine", str(lane.path))
    (own / "commondir").write_text("../../../nonexist\n")
    _, _, notes = teardown.swept_git(repo, keep={"1-lane"}, known={"1-lane"})
    assert any("repaired the worktree registration of lane 1-lane" in n for n in notes), notes
    assert (own / "commondir").read_text() == "../..\n"
    assert git(lane.path, "rev-parse", "--abbrev-ref", "HEAD") == "agent-loop/1-lane"


def test_an_emptied_commondir_git_worktree_list_fails_on_is_found_by_its_lane(
        repo: Path, tmp_path: Path) -> None:
    # The repair where `git worktree list` fails on an emptied commondir is the sweep's own
    # (registration.mended): a lane's registration git named `1-lane1` (`1-lane` was someone
    # else's) was passed over there, and the run stopped at git's error.
    head = git(repo, "rev-parse", "HEAD")
    other = repo / ".git" / "worktrees" / "1-lane"
    other.mkdir(parents=True)
    (other / "gitdir").write_text(f"{tmp_path / 'elsewhere'}/.git\n")
    (other / "commondir").write_text("../..\n")
    (other / "HEAD").write_text(head + "\n")
    (other / "locked").write_text("someone's")
    lane = wt.open_git(repo, "1-lane", head, fresh=True)
    own = refs.worktree_git_dir(lane.path)
    assert own is not None and own.name == "1-lane1"
    (own / "commondir").write_text("")
    assert lane.path in worktree_list.git_worktrees(repo)
    assert (own / "commondir").read_text() == "../..\n"
    assert (other / "locked").read_text() == "someone's"


def test_a_lane_you_locked_gets_your_lock_back_once_a_run_went_on_in_it(
        repo: Path, tmp_path: Path) -> None:
    # The sweep of a run that goes on in a lane you locked unlocks it; done, the run puts your
    # lock back (it removed the lane). Never through the lane's `.git` file when that names a
    # folder outside the repository's worktrees (an agent's rewrite): nothing written there.
    base = git(repo, "rev-parse", "HEAD")
    lane = wt.open_git(repo, "1-mine", base, fresh=True)
    git(repo, "worktree", "lock", "--reason", "mine", str(lane.path))
    notes = teardown.swept_git(repo, keep={"1-mine"}, known={"1-mine"})[2]
    assert len(notes) == 1 and "locks it again when done" in notes[0], notes
    assert "locked" not in worktree_list.git_worktrees(repo)[lane.path.resolve()]
    notes = teardown.remove_git(repo, lane, drop_branch=True)
    assert lane.path.is_dir() and "left as it is" in notes[0], notes
    assert worktree_list.git_worktrees(repo)[lane.path.resolve()]["locked"] == "mine"
    # again, the agent's .git file naming a folder of its own
    teardown.swept_git(repo, keep={"1-mine"}, known={"1-mine"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "agent-loop-your-lock").write_text("planted")
    own = (lane.path / ".git").read_text()
    (lane.path / ".git").write_text(f"gitdir: {elsewhere}\n")
    assert teardown._locked_again(repo, lane.path) is None
    assert not (elsewhere / "locked").exists()
    (lane.path / ".git").write_text(own)
    assert teardown._locked_again(repo, lane.path) == "mine"


def test_a_lane_registration_you_locked_is_never_dropped(repo: Path) -> None:
    """A worktree in the lanes' folder that you locked (`git worktree lock`) is yours, even when
    its `commondir` is empty: agent-loop repairs that file or says it, never unregisters it."""
    path = lanes.lanes_dir(repo).resolve() / "1-mine"
    path.mkdir(parents=True)
    own = repo / ".git" / "worktrees" / "1-mine"
    own.mkdir(parents=True)
    (own / "locked").write_text("my notes, keep")
    (own / "HEAD").write_text(git(repo, "rev-parse", "HEAD") + "\n")
    (own / "gitdir").write_text(f"{path}/.git\n")
    (own / "commondir").write_text("")
    (path / ".git").write_text(f"gitdir: {own}\n")
    try:
        worktree_list.git_worktrees(repo)
    except VcsError:
        pass  # said as one line is fine; dropping it is not
    assert (own / "locked").read_text() == "my notes, keep"
    assert (own / "gitdir").read_text() == f"{path}/.git\n"


@pytest.mark.parametrize(("reason", "pid"), [
    ("agent-loop 123", 123), ("agent-loop  123\n", 123), ("agent-loop x", None),
    ("agent-loop 1 2", None), ("initializing", None), ("", None)])
def test_the_lane_lock_format_is_read_in_one_place(reason: str, pid: int | None) -> None:
    """`agent-loop <pid>` is read by registration.lane_maker alone; users_lock and the
    half-made check both go by it."""
    assert registration.lane_maker(reason) == pid
    ours = pid is not None or reason.strip() in ("initializing",)
    assert (registration.users_lock({"locked": reason}) is None) == ours
