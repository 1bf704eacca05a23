"""Opening the git worktrees of the lanes of a parallel run (agentloop.vcs.lanes): one per group,
on branch `agent-loop/<name>`, reused when whole; a broken one (a kill mid-`worktree add`, a
folder removed from outside) is taken down (agentloop.vcs.git.teardown) and made again on its
branch."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.files.shown import typed
from agentloop.vcs import STATE_DIR
from agentloop.vcs.breach import LaneBreach
from agentloop.vcs.git import refs
from agentloop.vcs.git.config_text import may_set_beyond_repository
from agentloop.vcs.git.lane_as_recorded import check_git_lane
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.record import AttemptRecord
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.worktree_list import branch_commit, drop_cut_short, git_worktrees, healthy
from agentloop.vcs.lanes import (
    BRANCH_PREFIX,
    LANES,
    PREVIOUS,
    Workspace,
    bookkeeping,
    check_folder,
    lanes_dir,
)


def _git(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    return Git(root).out(*args, codes=codes).strip()


def open_git(root: Path, name: str, base: str, fresh: bool, adopt: str = "",
             registered: dict[Path, dict[str, str]] | None = None) -> Workspace:
    """The worktree of lane `name` on branch agent-loop/<name>: reused when a healthy one is
    there and `fresh` is False, else (re)made. `fresh`: the branch starts at `base` (its old tip
    kept under refs/agent-loop/previous/); otherwise a branch that exists keeps its commits.
    `adopt`: the name an older version gave this lane; its branch and worktree become this
    lane's when this one has none yet, so nothing they hold is dropped. `registered`: the
    repository's worktrees as just listed (by the sweep), when nothing has changed them since."""
    with bookkeeping(root):
        if adopt and not fresh and _adopt(root, adopt, name):
            registered = None  # moved: the list is not what it was
        return _open_git(root, name, base, fresh, registered)


def take_up(root: Path, old: str, new: str) -> bool:
    """Whether the lane an older version named `old` was renamed `new` (open_git's `adopt`,
    for a lane opened afresh after: a rehearsal's)."""
    with bookkeeping(root):
        return _adopt(root, old, new)


def _adopt(root: Path, old: str, new: str) -> bool:
    """Whether an older version's lane `old` was renamed `new`."""
    git = Git(root)
    old_branch, new_branch = BRANCH_PREFIX + old, BRANCH_PREFIX + new
    if branch_commit(root, old_branch) is None or branch_commit(root, new_branch) is not None:
        return False
    old_path = (lanes_dir(root) / old).resolve()
    if old_path in git_worktrees(root) and old_path.is_dir():
        git.out("worktree", "move", str(old_path), str((lanes_dir(root) / new).resolve()))
    git.out("branch", "-m", old_branch, new_branch)
    own = refs.worktree_git_dir(lanes_dir(root) / new)
    if own is not None:
        AttemptRecord(own).renamed(f"refs/heads/{old_branch}", f"refs/heads/{new_branch}")
    return True


def _open_git(root: Path, name: str, base: str, fresh: bool,
              registered: dict[Path, dict[str, str]] | None) -> Workspace:
    check_folder(root, (name,))
    path = (lanes_dir(root) / name).resolve()
    branch = BRANCH_PREFIX + name
    listed = registered if registered is not None else git_worktrees(root)
    known = listed.get(path)
    if known is not None and healthy(path, known) and known.get("branch") != \
            f"refs/heads/{branch}" and (known.get("branch") is not None or
                                        _detached_ahead(root, known, branch)):
        # An agent checked out another branch (yours?) in the lane, or committed on a
        # detached HEAD there (which nothing else holds): remaking the lane would hide that,
        # and whatever it committed there, for good, its task's agent paid again from scratch.
        yours = Git(root).out("symbolic-ref", "-q", "HEAD", codes=(0, 1)).strip()
        found = check_git_lane(GitLaneRecord(path, f"refs/heads/{branch}", None, root, yours))
        if found is not None:
            raise LaneBreach(found)
    if known is not None and healthy(path, known) and known.get("branch") == \
            f"refs/heads/{branch}":
        if not fresh:
            return Workspace(name, path, branch, reused=True)
        # The lane's teardown, loaded where a lane is remade, not for the common new one.
        from agentloop.vcs.git.teardown import clean_git, keep_files

        keep_files(root, path, name)
        _git(path, "reset", "-q", "--hard")
        _git(path, "clean", "-q", "-f", "-d")
        note = _keep_previous(root, branch, base)
        _git(path, "reset", "-q", "--hard", base)
        return Workspace(name, path, branch, note=note)
    _not_anothers(listed, path, branch)
    if known is not None or path.exists():
        from agentloop.vcs.git.teardown import clean_git

        clean_git(root, path, yours_too=True)   # the lane is made again in its place
    exists = branch_commit(root, branch) is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    if exists and not fresh:
        _git(root, "worktree", "add", "-q", str(path), branch)
        return Workspace(name, path, branch, reused=True)
    note = _keep_previous(root, branch, base) if exists else ""
    _add_fresh(root, path, branch, base)
    return Workspace(name, path, branch, note=note)


def _not_anothers(listed: dict[Path, dict[str, str]], path: Path, branch: str) -> None:
    """VcsError, one line, when `branch` is checked out in another checkout's lane: a lane an
    older version left in a linked checkout of this repository (it named a plan's lanes alike in
    every checkout). Moving the branch would take that lane's commits from under it (git before
    2.42 lets `checkout -B` do so): it stays as it is, said, for its own checkout's run."""
    for other, fields in listed.items():
        if other != path and fields.get("branch") == f"refs/heads/{branch}" and \
                other.parent.name == LANES and other.parent.parent.name == STATE_DIR and \
                other.is_dir():  # (gone: a moved repository's, made again here as ever)
            raise VcsError(f"branch {branch} is checked out in {other}, a lane of another "
                           "checkout of this repository (an older agent-loop named a plan's "
                           "lanes alike in every checkout): agent-loop leaves it as it is; run "
                           "the plan in that checkout (with --rehearse, a rehearsal's) to go "
                           "on from it (it takes that lane up), or `git worktree remove "
                           f"{typed(str(other))}`, then run again")


def _detached_ahead(root: Path, known: dict[str, str], branch: str) -> bool:
    """Whether a lane registered detached (`known`, its `git worktree list` fields) has a HEAD
    with commits its branch has not (or no branch any more): the agent's, on no ref but that
    HEAD. A lane detached at its branch's commit, or behind it, holds nothing the branch
    lacks: made again as ever."""
    head, tip = known.get("HEAD"), branch_commit(root, branch)
    if not head or head == tip:
        return False
    return tip is None or not Git(root).ancestor(head, tip)


def _add_fresh(root: Path, path: Path, branch: str, base: str) -> None:
    """A worktree at `path` on branch `branch`, made or moved to `base`, with one git process
    where the repository's files allow (_registered; else `worktree add`, which starts an
    `update-ref` of its own: three, where `worktree add -B` takes four, starting `branch`,
    `symbolic-ref` and `reset --hard`): the worktree registered detached, empty and locked,
    then its branch and files in one `checkout -f -B` (which refuses a branch checked out
    elsewhere, as `worktree add -B` does, and runs a post-checkout hook as it did). The lock
    goes last, from its file, as `git worktree unlock` deletes it: a kill anywhere before
    leaves a locked lane, which the next run cleans and makes again."""
    # The lock names this process: a half-made registration of a live run is not repaired.
    reason = f"agent-loop {os.getpid()}"
    if not _registered(root, path, base, reason):
        _git(root, "worktree", "add", "-q", "--lock", "--reason", reason, "--detach",
             "--no-checkout", str(path), base)
    # Submodules stay as `worktree add` leaves them (its own checkout passes the same option),
    # whatever submodule.recurse says: the new worktree has none of their repositories.
    _git(path, "checkout", "-q", "-f", "--no-recurse-submodules", "-B", branch, base)
    own = refs.worktree_git_dir(path)
    if own is None:  # the files do not tell where git keeps it: git's own unlock
        _git(root, "worktree", "unlock", str(path))
    else:
        (own / "locked").unlink()


# A lane's name as git takes it for the name of a worktree's own folder, unchanged.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*")
_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Words of a repository's config (lower-cased) under which `worktree add` writes more or
# otherwise than _registered: a repository extension (reftable refs, per-worktree config), an
# include (anything), core.sharedRepository (its folders and files group- or all-writable),
# worktree.useRelativePaths (git >= 2.48: relative paths in `gitdir` and the `.git` file).
_GIT_WRITES_MORE = ("extensions", "include", "sharedrepository", "userelativepaths")


def _registered(root: Path, path: Path, base: str, reason: str) -> bool:
    """`git worktree add -q --lock --reason REASON --detach --no-checkout PATH BASE`, done by
    writing the files it writes, in its order (no process: that command and the `update-ref`
    it starts are two processes on the way to the first agent), but for two: `locked` has no
    trailing newline (git trims it on reading), and HEAD has no `logs/HEAD` entry (that one is
    the skipped `update-ref`'s). False, nothing written, where the files cannot say it all
    (_files_say_it_all), where the registration's folder is someone's (_own_folder), or where
    the writing fails."""
    if not _files_say_it_all(root, path, base):
        return False
    own = _own_folder(root / ".git", path.name)
    return own is not None and _write_registration(own, path, base, reason)


def _files_say_it_all(root: Path, path: Path, base: str) -> bool:
    """Whether writing files registers the worktree as `worktree add` would: not where the
    repository's git dir is not a folder of the checkout, a repository extension, an include or
    core.sharedRepository is in its config (reftable refs, per-worktree config, relative
    worktree paths, group-writable folders: git writes more, or otherwise),
    worktree.useRelativePaths is there or in the user's or system's config
    (agentloop.vcs.git.config_text), sparse-checkout patterns are (git copies them), git would
    change the name or take it with a number, a folder is there already, or the base is not a
    commit id."""
    git_dir = root / ".git"
    name = path.name
    if not git_dir.is_dir() or path.exists() or not _HEX.fullmatch(base) or \
            not _PLAIN_NAME.fullmatch(name) or name.endswith(".lock"):
        return False
    try:
        config = (git_dir / "config").read_text(encoding="utf-8").lower()
    except (OSError, UnicodeDecodeError):
        return False
    return not (any(word in config for word in _GIT_WRITES_MORE) or
                may_set_beyond_repository(b"userelativepaths") or
                (git_dir / "info" / "sparse-checkout").exists())


def _own_folder(git_dir: Path, name: str) -> Path | None:
    """The worktree's own folder under the repository's `worktrees/`, made empty for this
    registration: new, or one a kill left half-made (a run's lock, no gitdir), taken. None when
    it is someone's (git would take `name1`) or none can be made."""
    own = git_dir.resolve() / "worktrees" / name
    try:
        own.mkdir(parents=True)
    except FileExistsError:
        # A kill before its gitdir left it (a run's lock, no gitdir): ours to take. Anything
        # else there is someone's (git would take `name1`).
        if not drop_cut_short(own):
            return None
        try:
            own.mkdir()
        except OSError:
            return None
    except OSError:  # none can be made
        return None
    return own


def _write_registration(own: Path, path: Path, base: str, reason: str) -> bool:
    """The registration's files in `own` and the worktree's folder `path` with its `.git` file,
    in git's order; False, with nothing of them left, when one cannot be written."""
    # git's order: the lock first, so a kill before the last file leaves a locked, half-made
    # registration, which the next run deletes unless this process lives on: in _own_folder,
    # without a gitdir (git does not list it); else git lists a locked lane, cleaned
    # (clean_git), or fails to on an empty commondir (worktree_list drops it).
    # `made`: `path` by this call; one made by someone since _files_say_it_all looked stays theirs.
    made = False
    try:
        (own / "locked").write_text(reason)
        path.mkdir(parents=True)
        made = True
        (own / "gitdir").write_text(f"{path.resolve() / '.git'}\n")
        (path / ".git").write_text(f"gitdir: {own}\n")
        (own / "HEAD").write_text(base + "\n")
        (own / "commondir").write_text("../..\n")
    except OSError:  # a full disk, say: nothing left of it, and git's own add says what
        import shutil  # where used: off every run's way to its first agent

        shutil.rmtree(own, ignore_errors=True)
        if made:
            shutil.rmtree(path, ignore_errors=True)
        return False
    return True


def _keep_previous(root: Path, branch: str, base: str) -> str:
    """The lane's branch, about to start afresh at `base`: its tip kept under PREVIOUS; the
    line that says so when it holds commits `base` has not (yours, on a branch named as the
    lane, or a lane's work an older run left), else ""."""
    tip = _git(root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", codes=(0, 1))
    if not tip or tip == _git(root, "rev-parse", base):
        return ""
    kept = PREVIOUS + branch.removeprefix(BRANCH_PREFIX)
    _git(root, "update-ref", "-m", "agent-loop: a lane started afresh", kept, tip)
    if Git(root).run("merge-base", "--is-ancestor", tip, base, codes=(0, 1)).returncode == 0:
        return ""
    return (f"branch {branch} held commit {tip[:12]}, which your branch has not: it is kept "
            f"as {kept} (`git branch <name> {typed(kept)}` takes it back), and the lane starts "
            "afresh from your branch")
