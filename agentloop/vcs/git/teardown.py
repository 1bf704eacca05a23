"""Taking the lanes' git worktrees down (agentloop.vcs.lanes): a lane's worktree removed, from its
files where they say all of it, else with `worktree remove -f -f` and `prune` (a broken one: a
kill mid-`worktree add`, a folder removed from outside); leftover lanes swept; lane branches
deleted. What nobody committed in a lane, and a branch's commits that are not on the main line,
are kept under refs/agent-loop/ first."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Callable

from agentloop.files.shown import typed
from agentloop.vcs.git import refs
from agentloop.vcs.git.copied import relinked
from agentloop.vcs.git.registration import REMOVING, mended, own_folder, users_lock
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.worktree_list import branch_commit, git_worktrees, healthy
from agentloop.vcs.lanes import BRANCH_PREFIX, Workspace, bookkeeping, lanes_dir
from agentloop.vcs.rewritten import carried

# Where a lane's work that is not on the main line is kept when its branch or worktree goes.
KEPT = "refs/agent-loop/kept/"
KEPT_FILES = "refs/agent-loop/kept-files/"
# A lane's detached HEAD (its agent's `git checkout --detach`, then commits), which no branch
# holds: its worktree's HEAD is the one thing that does, and goes with it.
KEPT_HEAD = "refs/agent-loop/kept-head/"
# Beside `locked` in a lane's folder in the repository: the reason of your lock, which a run
# took off to go on in the lane (_taken_from_user), put back when that run is done with it
# (the lane removed: clean_git; kept, the run stopped: relock).
YOURS = "agent-loop-your-lock"


def _git(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    return Git(root).out(*args, codes=codes).strip()


def clean_git(root: Path, path: Path,
              registered: dict[Path, dict[str, str]] | None = None,
              yours_too: bool = False) -> list[str]:
    """Whatever is registered or left on disk at `path`: unregistered and deleted (branches
    stay; files nobody committed are kept first, under refs/agent-loop/kept-files/). Notes naming
    what was kept. `registered`: the worktrees as known without a `git worktree list`. A lane
    you locked (`git worktree lock`) is left as it is, unless `yours_too` (a lane made again
    in its place): its ignored files (a `.env`, a build) are in no commit to keep them in."""
    path = path.resolve()
    notes = []
    worktrees = registered if registered is not None else git_worktrees(root)
    yours = users_lock(worktrees[path]) if path in worktrees else None
    if yours is None and not yours_too and path.is_dir():
        yours = _locked_again(root, path)
    if yours is not None and not yours_too and path.is_dir():
        return [f"lane {path.name} is locked ({yours!r}), not by agent-loop: left as it is, "
                f"with its branch; `git worktree unlock {typed(path)}` and the next run removes it"]
    if path in worktrees and worktrees[path].get("locked") == REMOVING:
        notes.append(f"removed lane {path.name}, whose removal a kill had cut short: nothing "
                     "of yours was left in it (what nobody had committed there was kept first)")
    elif path in worktrees and (healthy(path, worktrees[path]) or users_lock(worktrees[path])):
        kept = keep_files(root, path, path.name)
        if yours is not None:
            notes.append(f"lane {path.name} was locked ({yours!r}), not by agent-loop: it is "
                         "removed all the same, as its group has nothing left to run")
        if kept:
            notes.append(f"the uncommitted files of lane {path.name} are kept in commit "
                         f"{kept[:12]} (`git show {typed(KEPT_FILES + path.name)}`)")
        notes += _keep_detached(root, path)
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


def _taken_from_user(root: Path, path: Path, fields: dict[str, str]) -> str | None:
    """A lane this run goes on in (a killed run's), which you locked (`git worktree lock`):
    unlocked, so that its attempt is rolled back there as in any lane left by a kill, its
    files kept first (refs/agent-loop/rolled-back); the line that says so, None when the lane
    bore no lock of yours."""
    reason = users_lock(fields)
    if reason is None or not path.is_dir():
        return None
    # Your lock said keep this lane: this run locks it again when it is done in it (clean_git),
    # not removes it, ignored files and all. Written before the unlock: a kill between leaves
    # the lane locked still, or the reason beside it.
    own = own_folder(root / ".git", path)
    try:
        if own is not None:
            (own / YOURS).unlink(missing_ok=True)   # never written through a link
            (own / YOURS).write_text(reason, encoding="utf-8")
    except OSError:
        return None  # not unlocked: the sweep leaves it as any lane it may not take
    if Git(root).code("worktree", "unlock", str(path), codes=(0, 128))[0]:
        if own is not None:
            (own / YOURS).unlink(missing_ok=True)
        return None  # still locked: the sweep leaves it as any lane it may not take
    return (f"lane {path.name} was locked ({reason!r}), not by agent-loop: this run "
            "unlocked it and goes on in it, and locks it again when done; what was left "
            "uncommitted there is kept before anything is rolled back")


def relock(root: Path, path: Path) -> None:
    """A lane kept for its group's next run (the run in it stopped): your lock a run took off
    it to go on in it (_taken_from_user) put back now, not when a later run is done in it (or
    never, should none come): the lane is no run's until then."""
    _locked_again(root, path.resolve())


def _locked_again(root: Path, path: Path) -> str | None:
    """The reason of your lock a run took off the lane at `path` to go on in it
    (_taken_from_user), put back on it now (as `git worktree lock` writes it); None when
    there was none, or it cannot be put back."""
    own = own_folder(root / ".git", path)
    if own is None or (own / YOURS).is_symlink() or (own / "locked").is_symlink():
        return None  # an agent's link: nothing of yours read or written through it
    try:
        reason = (own / YOURS).read_text(encoding="utf-8", errors="replace")
        (own / "locked").write_text(reason, encoding="utf-8")
        (own / YOURS).unlink()
    except OSError:
        return None
    return reason


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


def _keep_detached(root: Path, path: Path) -> list[str]:
    """The worktree at `path` on a detached HEAD that no branch holds (the commits its agent
    made there): HEAD kept under KEPT_HEAD first, and the line that says so. Read from its
    files, no process, for a lane on a branch (nearly every one)."""
    own = refs.worktree_git_dir(path)
    try:
        head = (own / "HEAD").read_text(encoding="utf-8").strip() if own is not None else ""
    except (OSError, UnicodeDecodeError):
        head = ""
    if own is not None and (not head or head.startswith("ref: ")):
        return []  # on a branch (which stays, or drop_branches keeps), or nothing to read
    git = Git(path)
    sha = git.sha("HEAD")
    if sha is None or git.out("for-each-ref", "--count=1", "--contains", sha, "refs/heads/"):
        return []
    ref = KEPT_HEAD + path.name
    Git(root).out("update-ref", "--create-reflog", "-m", "agent-loop: kept", ref, sha)
    return [f"lane {path.name} was on a detached HEAD at {sha[:12]}, which no branch holds "
            f"(commits its agent made there): kept as {ref} (`git log -p {typed(ref)} --not "
            "--branches` shows them) before the lane was removed"]


def keep_files(root: Path, path: Path, name: str) -> str | None:
    """What the worktree at `path` holds beyond its HEAD commit, committed on it under
    refs/agent-loop/kept-files/<name>; its sha, or None when it holds nothing more."""
    git = Git(path)
    # What `add -A` below would take, asked once: mostly nothing, and then no more is needed.
    # A look only: the worktree's index, refreshed, is not written back (the files a commit
    # has just written are racily clean), since the worktree goes or is reset next and the
    # `add -A` below fills an index of its own.
    out = git.out("--no-optional-locks", "status", "--porcelain", "-z",
                  "--untracked-files=all", "--ignored=no",
                  "--", ".", ":(exclude).agent-loop", env={"GIT_LITERAL_PATHSPECS": "0"})
    if not out:
        return None
    head = git.sha("HEAD")
    if head is None:
        return None
    # A repository an agent made in the lane (`? app/`): `add -A` would fail on one with no
    # commit yet, or record one with a commit as a gitlink to a commit that goes with the
    # lane. Its files are kept as plain files instead (agentloop.vcs.git.nested).
    repos = sorted(e[3:-1] for e in out.split("\0") if e.startswith("?? ") and e.endswith("/"))
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git.out("read-tree", head, env=env)
        git.out("add", "-A", "--", ".", ":(exclude).agent-loop",
                *(f":(exclude,literal){r}" for r in repos),
                env={**env, "GIT_LITERAL_PATHSPECS": "0"})
        if repos:
            from agentloop.vcs.git.nested import files_in

            inner = files_in(git, repos, Path(scratch))[0]
            git.out("update-index", "--add", "-z", "--stdin", paths=sorted(inner), env=env)
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
    tip = branch_commit(root, branch)
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


def removing_git(root: Path, workspace: Workspace, main: str = "HEAD"
                 ) -> Callable[[], list[str]]:
    """remove_git of a finished lane, its branch too, started in a thread of its own: what
    the run does after its last lane (its state's last save, its closing lines' sums) goes on
    while git looks for uncommitted files and the lane's files, folder and branch are deleted,
    most of that a wait on the disk. The function that waits for it: its notes, or what it
    raised. Its own lock (bookkeeping) keeps another run's lanes apart meanwhile."""
    done: list[list[str]] = []
    failed: list[BaseException] = []

    def remove() -> None:
        try:
            done.append(remove_git(root, workspace, drop_branch=True, main=main))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiter, said there
            failed.append(exc)

    thread = threading.Thread(target=remove, name="agent-loop lane removal", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread can start (a limit on threads): removed here
        notes = remove_git(root, workspace, drop_branch=True, main=main)
        return lambda: notes

    def removed() -> list[str]:
        thread.join()
        if failed:
            raise failed[0]
        return done[0]
    return removed


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
        # The plan's lanes (its run lock: no run holds them) whose links name another
        # repository (the repository copied whole), or whose registration an agent damaged,
        # written back before git is asked about them.
        notes += relinked(root, known or ())
        notes += mended(root, known or ())
        # No linked worktree at all (as the repository's files say, when its git dir is a
        # folder of the checkout): nothing registered to list.
        listed = {} if (root / ".git").is_dir() and refs.no_linked_worktrees(root / ".git") \
            else git_worktrees(root)
        registered = {p for p in listed if p.parent == folder}
        # A symlink there is no lane of ours (vcs.lanes.check_folder says so): resolved, its
        # target elsewhere could be taken for a lane and deleted.
        on_disk = {p.resolve() for p in folder.iterdir() if not p.is_symlink()} \
            if folder.is_dir() else set()
        taken = False
        for path in sorted(registered | on_disk):
            if path.name not in keep and (known is None or path.name in known):
                notes += clean_git(root, path)
                if not path.exists():  # a lane you locked stays (clean_git)
                    gone.append(path.name)
            elif path in listed and (known is None or path.name in known):
                note = _taken_from_user(root, path, listed[path])
                if note is not None:
                    notes.append(note)
                    taken = True
    # A removal, the prune after one, or an unlock changed the list.
    return gone, (listed if not gone and not taken else None), notes


def checked_out(root: Path, names: set[str], listed: dict[Path, dict[str, str]] | None
                ) -> set[str]:
    """The lanes of `names` whose branch a worktree still has checked out (`listed`: the
    repository's worktrees, None to ask git): another checkout's lane (an older version named a
    plan's lanes alike in every checkout) or one a sweep left (your lock). Not a sweep's to
    keep or drop: git refuses to delete such a branch, and a note that it was kept misleads."""
    if not names:
        return set()
    held = {fields.get("branch") for fields in
            (listed if listed is not None else git_worktrees(root)).values()}
    return {name for name in names if f"refs/heads/{BRANCH_PREFIX}{name}" in held}


def drop_branches(root: Path, names: set[str], main: str = "HEAD") -> list[str]:
    """Delete the lane branches of these lanes, where they exist; a branch holding a change
    that is not on `main` is kept under refs/agent-loop/kept/ first. Notes naming those."""
    notes = []
    for name in sorted(names):
        if branch_commit(root, BRANCH_PREFIX + name) is None:
            continue  # none there (the files say so): no `branch -D` to find that out
        kept = keep_unlanded(root, BRANCH_PREFIX + name, main)
        if kept:
            notes.append(f"lane branch {BRANCH_PREFIX + name} held commits that are not on "
                         f"the main line: kept as {kept} "
                         f"(`git log -p {typed(main)}..{typed(kept)}`)")
        if not _branch_dropped_from_files(root / ".git", "refs/heads/" + BRANCH_PREFIX + name):
            _git(root, "branch", "-q", "-D", BRANCH_PREFIX + name, codes=(0, 1))
    return notes


def _branch_dropped_from_files(git_dir: Path, ref: str) -> bool:
    """`git branch -D` of lane branch `ref`, done from files where they say all of it (no
    process): a loose ref in a checkout's own `.git` folder, in no packed-refs, no lock on it
    nor on packed-refs (a `git pack-refs` or `gc --auto` under way would write it back), no
    section of its own in the config (nor an include that could hold one), no worktree's HEAD
    on it (nor a rebase or bisect under way in one). No hook is told either way: agent-loop's
    `git branch -D` runs none (agentloop.vcs.git.run.GUARD).
    Its ref goes first, then its reflog, in git's order: a kill in between leaves a reflog of
    no branch, which a branch made again under that name only appends to. False, nothing done,
    when the files do not say so (or the ref's file would not go)."""
    loose = git_dir / ref
    if not git_dir.is_dir() or refs.branch_tip(git_dir, ref) in (None, "") or \
            not loose.is_file() or loose.with_name(loose.name + ".lock").exists() or \
            (git_dir / "packed-refs.lock").exists():
        return False
    try:
        packed = (git_dir / "packed-refs").read_bytes()
    except FileNotFoundError:
        packed = b""
    except OSError:
        return False
    name = ref.removeprefix("refs/heads/")
    try:
        config = (git_dir / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    lowered = config.lower()
    if f" {ref}".encode() in packed or "[include" in lowered or name in config:
        return False
    worktrees = git_dir / "worktrees"
    heads = [git_dir / "HEAD", *(w / "HEAD" for w in worktrees.iterdir())] \
        if worktrees.is_dir() else [git_dir / "HEAD"]
    for head in heads:
        # A rebase or bisect under way may name the branch elsewhere (git refuses then too).
        if any((head.parent / busy).exists()
               for busy in ("rebase-merge", "rebase-apply", "BISECT_START")):
            return False
        try:
            if head.read_text(encoding="utf-8").strip() == f"ref: {ref}":
                return False
        except (OSError, UnicodeDecodeError):
            return False
    try:
        loose.unlink()
    except OSError:
        return False
    (git_dir / "logs" / ref).unlink(missing_ok=True)
    for folder in (loose.parent, (git_dir / "logs" / ref).parent):
        # Emptied folders under refs/heads/ go, as git's own deletion takes them.
        with contextlib.suppress(OSError):
            if folder.name != "heads":
                folder.rmdir()
    return True
