"""git worktrees for the lanes of a parallel run (agentloop.vcs.lanes): one per group, on branch
`agent-loop/<name>`; a broken one (a kill mid-`worktree add`, a folder removed from outside) is
cleaned with `worktree remove -f -f` and `prune` and made again on its branch. A whole one goes
from its files, as `worktree remove` would delete them, with no process."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.check import GitLaneRecord, LaneBreach, check_git_lane
from agentloop.vcs.git import refs
from agentloop.vcs.git.run import Git
from agentloop.vcs.lanes import BRANCH_PREFIX, PREVIOUS, Workspace, bookkeeping, lanes_dir
from agentloop.vcs.rewritten import carried

# Where a lane's work that is not on the main line is kept when its branch or worktree goes.
KEPT = "refs/agent-loop/kept/"
KEPT_FILES = "refs/agent-loop/kept-files/"
# Why a lane's worktree is locked (git's own `locked` file, with this reason) while its removal
# deletes its files, which begins once what nobody committed there is kept: a kill inside it
# leaves a lane the next run neither works in nor takes the deletions in for someone's work.
REMOVING = "agent-loop is removing this lane"


def _git(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    return Git(root).out(*args, codes=codes).strip()


def git_worktrees(root: Path) -> dict[Path, dict[str, str]]:
    """Registered worktrees by folder: their porcelain fields (branch, locked, prunable...)."""
    try:
        out = _git(root, "worktree", "list", "--porcelain")
    except VcsError:
        if not _drop_half_made(root):
            raise
        out = _git(root, "worktree", "list", "--porcelain")
    found: dict[Path, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in out.splitlines() + [""]:
        if not line:
            if "worktree" in current:
                found[Path(current["worktree"]).resolve()] = current
            current = {}
            continue
        key, _, value = line.partition(" ")
        current[key] = value
    return found


def _drop_half_made(root: Path) -> bool:
    """Whether a lane's registration that a kill cut short inside `git worktree add` was found
    and deleted. git writes a new worktree's files one by one after its lock: killed between
    opening one and writing it, it leaves an empty `commondir` or `gitdir`, which makes every
    `git worktree list` fail ("failed to read .../commondir") and which `git worktree prune`
    never takes (the worktree is locked). Only a registration that is locked, has such a file
    and is a lane's (its name a folder in the lanes folder, made before those files) goes; the
    lane's own folder is then a leftover on disk, cleaned as any other."""
    found = False
    folder = root / ".git" / "worktrees"
    try:
        entries = list(folder.iterdir()) if (root / ".git").is_dir() else []
    except OSError:
        return False
    for own in entries:
        if not (own / "locked").exists() or not (lanes_dir(root) / own.name).is_dir():
            continue
        if any(not _written(own / name) for name in ("commondir", "gitdir")) \
                and not _maker_alive(own / "locked"):
            shutil.rmtree(own)
            found = True
    return found


def _maker_alive(locked: Path) -> bool:
    """Whether the lock names (`agent-loop PID`, as `_add_fresh` writes it) a live process other
    than this one: another run inside its own `worktree add`, whose registration is not half-made
    but half-way. A lock with no pid (an older lane, git's own) is repairable as before."""
    import os

    try:
        words = locked.read_text().split()
    except OSError:
        return False
    if len(words) != 2 or words[0] != "agent-loop" or not words[1].isdigit():
        return False
    pid = int(words[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, someone else's
    return True


def _written(file: Path) -> bool:
    try:
        return file.stat().st_size > 0
    except OSError:
        return False


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


def _adopt(root: Path, old: str, new: str) -> bool:
    """Whether an older version's lane `old` was renamed `new`."""
    git = Git(root)
    old_branch, new_branch = BRANCH_PREFIX + old, BRANCH_PREFIX + new
    if _tip(root, old_branch) is None or _tip(root, new_branch) is not None:
        return False
    old_path = (lanes_dir(root) / old).resolve()
    if old_path in git_worktrees(root) and old_path.is_dir():
        git.out("worktree", "move", str(old_path), str((lanes_dir(root) / new).resolve()))
    git.out("branch", "-m", old_branch, new_branch)
    return True


def _open_git(root: Path, name: str, base: str, fresh: bool,
              registered: dict[Path, dict[str, str]] | None) -> Workspace:
    path = (lanes_dir(root) / name).resolve()
    branch = BRANCH_PREFIX + name
    known = (registered if registered is not None else git_worktrees(root)).get(path)
    if known is not None and _healthy(path, known) and known.get("branch") not in \
            (None, f"refs/heads/{branch}"):
        # An agent checked out another branch (yours?) in the lane: remaking the lane would
        # hide that, and whatever it committed there, for good.
        yours = Git(root).out("symbolic-ref", "-q", "HEAD", codes=(0, 1)).strip()
        found = check_git_lane(GitLaneRecord(path, f"refs/heads/{branch}", None, root, yours))
        if found is not None:
            raise LaneBreach(found)
    if known is not None and _healthy(path, known) and known.get("branch") == \
            f"refs/heads/{branch}":
        if not fresh:
            return Workspace(name, path, branch, reused=True)
        _keep_files(root, path, name)
        _git(path, "reset", "-q", "--hard")
        _git(path, "clean", "-q", "-f", "-d")
        _keep_previous(root, branch, base)
        _git(path, "reset", "-q", "--hard", base)
        return Workspace(name, path, branch)
    if known is not None or path.exists():
        clean_git(root, path)
    exists = _tip(root, branch) is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    if exists and not fresh:
        _git(root, "worktree", "add", "-q", str(path), branch)
        return Workspace(name, path, branch, reused=True)
    if exists:
        _keep_previous(root, branch, base)
    _add_fresh(root, path, branch, base)
    return Workspace(name, path, branch)


def _add_fresh(root: Path, path: Path, branch: str, base: str) -> None:
    """A worktree at `path` on branch `branch`, made or moved to `base`, in two commands (three
    processes) where `worktree add -B` takes four (it starts `branch`, `symbolic-ref` and
    `reset --hard`): the worktree registered detached, empty and locked, then its branch and
    files in one `checkout -f -B` (which refuses a branch checked out elsewhere, as `worktree
    add -B` does, and runs a post-checkout hook as it did). The lock goes last, from its file,
    as `git worktree unlock` deletes it: a kill anywhere before leaves a locked lane, which the
    next run cleans and makes again."""
    import os

    # The lock names this process: a half-made registration of a live run is not repaired.
    _git(root, "worktree", "add", "-q", "--lock", "--reason", f"agent-loop {os.getpid()}",
         "--detach", "--no-checkout", str(path), base)
    # Submodules stay as `worktree add` leaves them (its own checkout passes the same option),
    # whatever submodule.recurse says: the new worktree has none of their repositories.
    _git(path, "checkout", "-q", "-f", "--no-recurse-submodules", "-B", branch, base)
    own = refs.worktree_git_dir(path)
    if own is None:  # the files do not tell where git keeps it: git's own unlock
        _git(root, "worktree", "unlock", str(path))
    else:
        (own / "locked").unlink()


def _healthy(path: Path, fields: dict[str, str]) -> bool:
    # A kill while a lane is made leaves it locked (_add_fresh; an older version's kill inside
    # `worktree add` left it "initializing"), with a half checkout.
    return path.is_dir() and "prunable" not in fields and "locked" not in fields


def _tip(root: Path, branch: str) -> str | None:
    """The commit of branch `branch` (short name), None when there is none: read from the
    repository's files where they tell (the main checkout's .git a folder), else asked."""
    if (root / ".git").is_dir():
        found = refs.branch_tip(root / ".git", "refs/heads/" + branch)
        if found is not None:
            return found or None
    return Git(root).sha(f"refs/heads/{branch}")


def lane_branch_tip(root: Path, name: str) -> str | None:
    """The commit of lane `name`'s branch, None when it has none."""
    return _tip(root, BRANCH_PREFIX + name)


def _keep_previous(root: Path, branch: str, base: str) -> None:
    tip = _git(root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", codes=(0, 1))
    if tip and tip != _git(root, "rev-parse", base):
        _git(root, "update-ref", "-m", "agent-loop: a lane started afresh",
             PREVIOUS + branch.removeprefix(BRANCH_PREFIX), tip)


def clean_git(root: Path, path: Path,
              registered: dict[Path, dict[str, str]] | None = None) -> list[str]:
    """Whatever is registered or left on disk at `path`: unregistered and deleted (branches
    stay; files nobody committed are kept first, under refs/agent-loop/kept-files/). Notes naming
    what was kept. `registered`: the worktrees as known without a `git worktree list`."""
    path = path.resolve()
    notes = []
    worktrees = registered if registered is not None else git_worktrees(root)
    if path in worktrees and worktrees[path].get("locked") == REMOVING:
        notes.append(f"removed lane {path.name}, whose removal a kill had cut short: nothing "
                     "of yours was left in it (what nobody had committed there was kept first)")
    elif path in worktrees and _healthy(path, worktrees[path]):
        kept = _keep_files(root, path, path.name)
        if kept:
            notes.append(f"the uncommitted files of lane {path.name} are kept in commit "
                         f"{kept[:12]} (`git show {KEPT_FILES}{path.name}`)")
    removed = False
    if path in worktrees:
        if "locked" in worktrees[path]:
            _git(root, "worktree", "unlock", str(path), codes=(0, 128))
        removed = _removed_from_files(root, path)
        if not removed:  # git's own removal deletes in the same order: locked so too
            _lock_for_removal(refs.worktree_git_dir(path))
            removed = Git(root).code("worktree", "remove", "-f", "-f", str(path),
                                     codes=(0, 128))[0] == 0
    if path.exists():
        shutil.rmtree(path)
    if not removed:  # what a kill or a folder removed from outside left registered
        _git(root, "worktree", "prune")
    return notes


def _removed_from_files(root: Path, path: Path) -> bool:
    """`git worktree remove -f -f` of the worktree at `path`, done from files where they say
    all of it (no process): a worktree whole and unlocked (refs.healthy_worktree), whose folder
    in the repository is under the checkout's own `.git/worktrees/`. Deleted in git's order,
    its files first, then that folder (and `worktrees/` with the last one): a kill in between
    leaves a worktree whose folder is gone, which the next run prunes. False, nothing done,
    when the files do not say so."""
    git_dir = root / ".git"
    if path.is_symlink() or not git_dir.is_dir() or not refs.healthy_worktree(path):
        return False
    own = refs.worktree_git_dir(path)
    if own is None or own.parent != (git_dir / "worktrees").resolve():
        return False
    _lock_for_removal(own)
    shutil.rmtree(path)
    shutil.rmtree(own)
    try:
        own.parent.rmdir()  # only when no other worktree is left in it
    except OSError:
        pass
    return True


def _lock_for_removal(own: Path | None) -> None:
    """Lock the worktree whose own folder in the repository is `own` (REMOVING), as `git
    worktree lock` would; nothing when it is not known."""
    if own is not None:
        try:
            (own / "locked").write_text(REMOVING)
        except OSError:
            pass  # no lock: a kill inside the removal leaves what it left before


def _keep_files(root: Path, path: Path, name: str) -> str | None:
    """What the worktree at `path` holds beyond its HEAD commit, committed on it under
    refs/agent-loop/kept-files/<name>; its sha, or None when it holds nothing more."""
    git = Git(path)
    # What `add -A` below would take, asked once: mostly nothing, and then no more is needed.
    out = git.out("status", "--porcelain", "-z", "--untracked-files=all", "--ignored=no",
                  "--", ".", ":(exclude).agent-loop", env={"GIT_LITERAL_PATHSPECS": "0"})
    if not out:
        return None
    head = git.sha("HEAD")
    if head is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git.out("read-tree", head, env=env)
        git.out("add", "-A", "--", ".", ":(exclude).agent-loop", env={
            **env, "GIT_LITERAL_PATHSPECS": "0"})
        tree = git.out("write-tree", env=env).strip()
    if tree == git.out("rev-parse", f"{head}^{{tree}}").strip():
        return None
    sha = git.out("commit-tree", tree, "-p", head, input="agent-loop: files left in lane "
                  f"{name}, kept before it was removed\n").strip()
    Git(root).out("update-ref", "--create-reflog", "-m", "agent-loop: kept", KEPT_FILES + name,
                  sha)
    return sha


def keep_unlanded(root: Path, branch: str, main: str) -> str | None:
    """Before branch `branch` goes: any commit of it whose change is not on `main` (by `git
    cherry`'s patch ids) keeps the branch's tip under refs/agent-loop/kept/; that ref, or None
    when everything on it is on the main line."""
    git = Git(root)
    tip = _tip(root, branch)
    if tip is None:
        return None
    if main.startswith("refs/heads/") and (root / ".git").is_dir() and \
            refs.branch_tip(root / ".git", main) == tip:
        return None  # where the main line is (every task landed): all of it is there
    out = git.out("cherry", main, f"refs/heads/{branch}", codes=(0, 128))
    # A commit whose patch is not on the main line may still be there, squashed or amended
    # by you: its files as it left them. Nothing of it to keep then.
    if all(carried(git, line[2:], main) for line in out.splitlines() if line.startswith("+")):
        return None
    ref = KEPT + branch.removeprefix(BRANCH_PREFIX)
    git.out("update-ref", "--create-reflog", "-m", "agent-loop: kept", ref,
            f"refs/heads/{branch}")
    return ref


def remove_git(root: Path, workspace: Workspace, drop_branch: bool = False,
               main: str = "HEAD") -> list[str]:
    """The lane's worktree removed; its branch too when asked (its work is on the main line:
    what is not is kept first). Notes naming what was kept."""
    path = workspace.path.resolve()
    with bookkeeping(root):
        # A lane this run used, whole as its files say: no `git worktree list` to find it.
        known = {path: {"worktree": str(path)}} if refs.healthy_worktree(path) else None
        notes = clean_git(root, path, known)
        if drop_branch:
            notes += drop_branches(root, {workspace.name}, main)
    return notes


def sweep_git(root: Path, keep: set[str], known: set[str] | None = None) -> list[str]:
    """Remove lane worktrees whose names are not in `keep` (left by an earlier run), among the
    `known` names when given (another copy's, a rehearsal's, is left alone); their branches
    stay. Returns the names removed."""
    return swept_git(root, keep, known)[0]


def swept_git(root: Path, keep: set[str], known: set[str] | None = None
              ) -> tuple[list[str], dict[Path, dict[str, str]] | None, list[str]]:
    """sweep_git's names removed; the repository's worktrees as it listed them when it
    removed none (else None: a removal, or the prune after one, changed the list); and the
    notes saying what was kept of them (clean_git)."""
    gone, notes = [], []
    folder = lanes_dir(root).resolve()
    with bookkeeping(root):
        # No linked worktree at all (as the repository's files say, when its git dir is a
        # folder of the checkout): nothing registered to list.
        listed = {} if (root / ".git").is_dir() and refs.no_linked_worktrees(root / ".git") \
            else git_worktrees(root)
        registered = {p for p in listed if p.parent == folder}
        on_disk = {p.resolve() for p in folder.iterdir()} if folder.is_dir() else set()
        for path in sorted(registered | on_disk):
            if path.name not in keep and (known is None or path.name in known):
                notes += clean_git(root, path)
                gone.append(path.name)
    return gone, (listed if not gone else None), notes


def drop_branches(root: Path, names: set[str], main: str = "HEAD") -> list[str]:
    """Delete the lane branches of these lanes, where they exist; a branch holding a change
    that is not on `main` is kept under refs/agent-loop/kept/ first. Notes naming those."""
    notes = []
    for name in sorted(names):
        if _tip(root, BRANCH_PREFIX + name) is None:
            continue  # none there (the files say so): no `branch -D` to find that out
        kept = keep_unlanded(root, BRANCH_PREFIX + name, main)
        if kept:
            notes.append(f"lane branch {BRANCH_PREFIX + name} held commits that are not on "
                         f"the main line: kept as {kept} (`git log -p {main}..{kept}`)")
        _git(root, "branch", "-q", "-D", BRANCH_PREFIX + name, codes=(0, 1))
    return notes
