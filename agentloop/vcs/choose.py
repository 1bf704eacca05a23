"""Which backend a run gets: the one place that turns `--vcs` into a VCS implementation."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from agentloop.ondemand import dataclass_now as dataclass
from agentloop.vcs import KINDS, find_root

# What a lane's step raises when its change does not fit the main line, when its landing waited
# too long for the user's edits, or when the agent acted outside its task; named here so that the
# run core catches them without importing a backend (the modules are small: no git library).
from agentloop.vcs.breach import LaneBreach as LaneBreach

# Two records of a git lane's step, named here for the run core, which makes them before they
# are needed (agentloop.run.ahead) without importing a backend.
from agentloop.vcs.git.lane_record import GitLaneRecord as GitLaneRecord
from agentloop.vcs.git.your_checkout import Listed as Listed
from agentloop.vcs.landing import WAIT_LIMIT
from agentloop.vcs.landing import IntegrationConflict as IntegrationConflict
from agentloop.vcs.landing import LandingHeld as LandingHeld
from agentloop.vcs.lanes import Workspace, check_folder, lanes_dir
from agentloop.vcs.protocol import Lane, Vcs
from agentloop.vcs.stays_git import git_only


def open_vcs(kind: str, root: Path, task_file: Path, allow_dirty: bool = False,
             lanes: bool = False) -> Vcs:
    """The backend for `kind` (auto, jj, git or none); nothing is changed until prepare().
    `lanes`: the run's agents work in lanes where one can be, so git leaves the user's
    uncommitted files alone there instead of refusing them."""
    # Imported here: `--status` imports this package for find_root and must stay fast.
    from agentloop.errors import ProgramNotFound, VcsError

    if kind == "none":
        from agentloop.vcs.none import NoneVcs
        return NoneVcs()
    if kind == "git":
        from agentloop.vcs.git.backend import GitVcs
        return GitVcs(root, task_file, allow_dirty, lanes=lanes)
    if kind not in ("jj", "auto"):
        raise VcsError(f"unknown version control {kind!r}: choose one of {', '.join(KINDS)}")
    repo = find_root(root)
    if kind == "auto" and repo is not None and git_only(repo):
        # A git user's repository stays one (agentloop.vcs.stays_git says why).
        from agentloop.vcs.git.backend import GitVcs
        return GitVcs(root, task_file, allow_dirty, lanes=lanes)
    if repo is not None and (repo / ".git").is_file() and not (repo / ".jj").is_dir():
        # A git worktree (or submodule): its .git is a file, and jj cannot colocate there.
        if kind == "jj":
            raise VcsError(f"{repo} is a git worktree, where jj cannot colocate: run in the "
                           "main repository, or use --vcs git")
        from agentloop.vcs.git.backend import GitVcs
        return GitVcs(root, task_file, allow_dirty, lanes=lanes,
                      note=f"{repo} is a git worktree, where jj cannot colocate: using git")
    from agentloop.vcs.jj.backend import JjVcs
    from agentloop.vcs.jj.run import jj_root
    try:
        found = jj_root(root)
    except ProgramNotFound:
        if kind == "jj":
            raise VcsError("jj is not installed or not on PATH") from None
        if repo is not None and (repo / ".jj").is_dir() and not (repo / ".git").exists():
            raise VcsError(f"{repo} is a jj repository, but jj is not installed or not on "
                           "PATH") from None
        from agentloop.vcs.git.backend import GitVcs
        return GitVcs(root, task_file, allow_dirty, lanes=lanes)
    # With jj the user's uncommitted work stays in its own change, so allow_dirty is moot.
    return JjVcs(found or root, task_file, initialized=found is not None)


# A run's main line (the branch every lane's tasks land on) and a lane's backend, opened by kind
# here so that the run core (agentloop.run) and the fleet never import a backend's module.
MainLine = Any   # GitMainLine | JjMainLine: tip(), land(...), forget(...), forget_all()


def open_main_line(kind: str, root: Path, on_wait: Callable[[str], None] | None = None,
                   stopping: Callable[[], bool] | None = None, ref: str | None = None,
                   wait_limit: float = WAIT_LIMIT, checkout: Vcs | None = None,
                   key: str = "") -> MainLine:
    """The main line of a `kind` (git or jj) repository: for git the branch the main checkout
    is on (or `ref`), for jj the line of @. `wait_limit`: the lane wait, in seconds.
    `checkout`: the run's backend in the main checkout, whose jj options (what a snapshot of
    the checkout leaves out) the main line's own jj commands take too. `key`: the run's plan
    key (agentloop.vcs.lanes.plan_key), under which git's landing marks are kept apart."""
    if kind == "git":
        from agentloop.vcs.git.backend import GitVcs
        from agentloop.vcs.git.mainline import GitMainLine, current_branch
        # The checkout's git dirs, found as it was prepared: the same repository's.
        dirs = checkout.tree.dirs() if isinstance(checkout, GitVcs) else None
        # What is uncommitted, as the checkout's prepare found it a moment ago: no second status.
        listed = checkout.found_listed if isinstance(checkout, GitVcs) else None
        return GitMainLine(root, ref if ref is not None else current_branch(root),
                           on_wait=on_wait, stopping=stopping, wait_limit=wait_limit,
                           dirs=dirs, listed=listed,
                           checkout_kept=checkout.killed_attempt_kept
                           if isinstance(checkout, GitVcs) else None, key=key)
    from agentloop.vcs.jj.backend import JjVcs
    from agentloop.vcs.jj.mainline import JjMainLine
    jj_line = JjMainLine(root, on_wait=on_wait, stopping=stopping, wait_limit=wait_limit)
    if isinstance(checkout, JjVcs):
        jj_line.jj.config = list(checkout.jj.config)
        jj_line.auto_track = checkout.auto_track
    return jj_line


def has_commit(kind: str, root: Path) -> bool:
    """Whether a lane can start from the repository's line: git's branch has a commit (jj
    always has its root)."""
    if kind != "git":
        return True
    if (root / ".git").is_dir():  # HEAD and its branch read from files, where they tell
        from agentloop.vcs.git import refs
        found = refs.where(root / ".git", root / ".git")
        if found is not None:
            return found[1] is not None
    from agentloop.vcs.git.run import Git
    return Git(root).sha("HEAD") is not None


def open_lane(kind: str, main: MainLine, workspace: Path, task_file: Path, branch: str = "",
              made: bool = False) -> Lane:
    """The backend of one lane's working copy (a git worktree or a jj workspace), whose
    finished tasks land on `main`. `made`: the working copy was just made afresh from a
    commit, so nothing in it is uncommitted or left by a killed run."""
    _lane_loaded(kind)
    if kind == "git":
        from agentloop.vcs.git.lane import LaneGit
        return LaneGit(workspace, task_file, main, made=made)
    from agentloop.vcs.jj.lane import LaneJj
    return LaneJj(workspace, task_file, main, branch, made=made)


# The lane modules a thread of ours loads ahead (load_lane_ahead), each set once it is done.
# The thread that opens the lane waits for that, where a stop reaches it, instead of importing
# the module beside the loading thread: Python's import would wait on the module's lock
# inside its own machinery, where a stop is put off (agentloop.errors.stop), and a loading
# thread stuck on the import lock (a third thread's import, a slow file system) would keep
# the run from ever stopping.
_AHEAD: dict[str, threading.Event] = {}


def load_lane_ahead(kind: str) -> Callable[[], None]:
    """Claim, in the thread that opens lanes and before the loading thread starts, the loading
    of the lane module of `kind` (load_lane); what that thread then calls once, whatever
    happened to it before (a failed load is done again, and said, where the lane opens)."""
    done = _AHEAD.setdefault(kind, threading.Event())

    def load() -> None:
        try:
            if not done.is_set():
                load_lane(kind)
        except Exception:  # said where the lane opens: it imports the module again
            pass
        finally:
            done.set()
    return load


def _lane_loaded(kind: str) -> None:
    done = _AHEAD.get(kind)
    if done is not None:
        done.wait()


def load_lane(kind: str) -> None:
    """The module open_lane needs for a lane of `kind`, loaded (ahead, in a thread: agentloop.
    run.ahead.make_ahead), with the record of the repository's settings a git lane's first
    step makes (agentloop.ondemand: else the main thread's, on the way to the first agent)."""
    if kind == "git":
        import agentloop.vcs.git.lane  # noqa: F401
        from agentloop.ondemand import made
        from agentloop.vcs.git.planted import Settings

        made(Settings)
    elif kind == "jj":
        import agentloop.vcs.jj.lane  # noqa: F401


def open_workspace(kind: str, root: Path, name: str, tip: str, fresh: bool, adopt: str = "",
                   main: MainLine | None = None, listed: Any = None) -> Workspace:
    """Lane `name`'s working copy (a git worktree or a jj workspace) at `tip`, or the one a
    killed run left when not `fresh`; git adopts a lane an older version left as `adopt`.
    `main`: the main line, whose jj options the user's checkout is snapshotted with.
    `listed`: Swept.listed, when nothing has added or removed a working copy since."""
    if kind == "git":
        from agentloop.vcs.git import worktrees
        return worktrees.open_git(root, name, tip, fresh, adopt=adopt, registered=listed)
    from agentloop.vcs.jj import workspaces
    from agentloop.vcs.jj.mainline import JjMainLine
    config = main.jj.config if isinstance(main, JjMainLine) else None
    return workspaces.open_jj(root, name, tip, fresh, config, listed=listed)


def has_lane(kind: str, root: Path, name: str) -> bool:
    """Whether lane `name` is there to go on in: its folder, or (git) its branch. Read from
    files where they tell."""
    from agentloop.vcs.lanes import lane_left
    if lane_left(root, name):
        return True
    if kind != "git":
        return False
    from agentloop.vcs.git.worktree_list import lane_branch_tip
    return lane_branch_tip(root, name) is not None


def remove_workspace(kind: str, root: Path, space: Workspace, main_ref: str = "HEAD"
                     ) -> list[str]:
    """A finished lane's working copy removed, with its branch (git); what was not on the main
    line is kept first. Notes naming what was kept."""
    if kind == "git":
        from agentloop.vcs.git import teardown
        return teardown.remove_git(root, space, drop_branch=True, main=main_ref)
    from agentloop.vcs.jj import workspaces
    workspaces.remove_jj(root, space)
    return []


def removing_workspace(kind: str, root: Path, space: Workspace, main_ref: str = "HEAD"
                       ) -> Callable[[], list[str]]:
    """remove_workspace begun for the run's last lane, beside what the run does after it (git:
    in a thread, agentloop.vcs.git.teardown.removing_git); the function that waits for it and
    returns its notes (or raises what the removal raised)."""
    if kind == "git":
        from agentloop.vcs.git import teardown
        return teardown.removing_git(root, space, main_ref)
    notes = remove_workspace(kind, root, space, main_ref)
    return lambda: notes


def keep_workspace(kind: str, root: Path, space: Workspace) -> None:
    """A lane kept as it is for its group's next run (the run stopped in it): git's gets back
    the lock of yours the run took off it to go on there (agentloop.vcs.git.teardown.relock)."""
    if kind == "git":
        from agentloop.vcs.git import teardown
        teardown.relock(root, space.path)


def locks_back(kind: str, root: Path, names: set[str]) -> None:
    """The lanes of `names` still there, each kept as it is: git's get back the lock of yours
    a run took off them to go on there and has not put back (the run stopped before it came to
    one, or as it made or left it); a lane without one is left alone. Only a lane's files are
    read."""
    if kind != "git":
        return  # jj's workspaces bear no lock of yours
    folder = lanes_dir(root)
    there = [folder / name for name in sorted(names) if (folder / name).is_dir()]
    if not there:
        return
    from agentloop.vcs.git import teardown
    for path in there:
        teardown.relock(root, path)


@dataclass(frozen=True)
class Swept:
    """What the sweep of a killed run's lanes did and found."""

    notes: tuple[str, ...]   # what was kept, to be said
    # The repository's working copies as the sweep listed them (git: worktrees by folder; jj:
    # workspace names), None when it removed one: for the first lane opened right after it.
    listed: Any = None


def sweep_workspaces(kind: str, root: Path, keep: set[str], known: set[str],
                     main_ref: str = "HEAD") -> Swept:
    """Working copies of `known` lanes not in `keep` (a killed run's) removed; for git their
    branches too, what is not on the main line kept first."""
    check_folder(root, known)
    if kind == "git":
        # Asked of the repository's files first: the teardown is not loaded before the run's
        # first agent when there is nothing to sweep (the run after a clean one, or the first).
        from agentloop.vcs.git.registration import nothing_to_sweep
        if nothing_to_sweep(root, known - keep):
            return Swept((), {})  # as swept_git lists them: none
        from agentloop.vcs.git import teardown
        _, registered, notes = teardown.swept_git(root, keep, known=known)
        gone = known - keep
        notes += teardown.drop_branches(root, gone - teardown.checked_out(root, gone, registered),
                                        main_ref)
        return Swept(tuple(notes), registered)
    from agentloop.vcs.jj import workspaces
    return Swept((), workspaces.swept_jj(root, keep, known=known)[1])

