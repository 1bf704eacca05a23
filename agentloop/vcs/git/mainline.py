"""git: putting a lane's task commits onto the main line without touching the user's checkout.

The main line is the branch the main checkout was on when the run began. Each task commit of a
lane is replayed onto it as one new commit (same tree change, author, date and message): `git
merge-tree --write-tree` merges it with the main line in memory, `git commit-tree` makes the
commit, and one `git update-ref --stdin` transaction moves the branch from the commit it was
just read at (compare-and-swap: a branch the user moved meanwhile is read again) and records
`refs/agent-loop/landed/<lane commit>`, so a run killed at any moment never lands a task twice.

The main checkout then follows with `git read-tree -m -u OLD NEW`, which changes only the paths
the commit changed and keeps everything else the user has, staged or not. A lock on the
checkout's index (`.git/index.lock`: a git of the user's, an agent's leftover) holds that off:
the checkout stays behind, said once, and follows the branch once the lock goes
(agentloop.vcs.git.behind). When the user's own
uncommitted edits (or untracked files) sit on a path the commit changes, the branch does not
move: the lane waits, saying which files once, until the user commits or stashes them. Moving it
would leave the checkout showing the task's change reversed, one commit away from undoing it.

The common case takes one process: a lane commit made right on the main line's tip, with the
main checkout on that branch (read from the git dir's files), lands as itself by `git merge
--ff-only`, which moves the branch from the tip it read (compare-and-swap, as above) and the
checkout with it, keeps every other edit of the user's, staged or not, and refuses, changing
nothing, when one sits on a path the commit changes. A refusal, or anything unusual, takes the
way above, which says what it waits for. A commit that landed as itself needs no landed record:
it is on the branch.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from agentloop.errors import VcsError
from agentloop.vcs.check import dirty, stamp
from agentloop.vcs.git import behind, refs
from agentloop.vcs.git.run import EMPTY_TREE, Git
from agentloop.vcs.landing import POLL_SECONDS, WAIT_LIMIT, IntegrationConflict, Waiting
from agentloop.vcs.protocol import KilledAttempt

LANDED = "refs/agent-loop/landed/"
# In the git dir while a landing's checkout has not followed the branch: "<old> <new>".
RECORD = "agent-loop-landing"
# The record's third word while the checkout is behind since a lock held its follow off.
BEHIND = "behind"


# How long a branch found gone is looked for again before the run says so (see tip).
RENAME_SETTLES = 1.0

class GitMainLine:
    """The branch every lane's tasks land on, and the one lock their landings take in turn."""

    def __init__(self, root: Path, ref: str, on_wait: Callable[[str], None] | None = None,
                 stopping: Callable[[], bool] | None = None,
                 wait_limit: float = WAIT_LIMIT, dirs: tuple[Path, Path] | None = None,
                 listed: list[str] | None = None,
                 checkout_kept: Callable[[str], KilledAttempt | None] | None = None) -> None:
        self.root = root
        self.git = Git(root)
        self.ref = ref
        self.on_wait = on_wait or (lambda text: None)
        self.stopping = stopping or (lambda: False)
        self.wait_limit = wait_limit
        # Told (files, since, line) while a landing waits: the run records it for --status.
        self.on_waits: Callable[[list[str], float, str], None] | None = None
        self._lock = threading.Lock()
        self._switch_told = False
        # The user's uncommitted paths as the run found them: a path that differs from this
        # later was written during the run. `listed`: the paths, as the checkout's backend
        # found them when it was prepared.
        self.before = self.stamps(listed)
        self._fresh_before: dict[str, tuple[int, int, int] | None] | None = dict(self.before)
        # `dirs`: (git dir, common dir) as the run's backend in the checkout found them.
        if dirs is None:
            found = self.git.out("rev-parse", "--absolute-git-dir", "--git-common-dir")
            dirs = (Path(found.split("\n")[0]), root / found.split("\n")[1])
        self.git_dir = Path(dirs[0])
        self.common_dir = Path(dirs[1]).resolve()
        # The checkout's backend's killed_attempt_kept: an attempt a killed run left there,
        # which its prepare rolled back, is the work of a task that now runs in a lane.
        self._checkout_kept = checkout_kept
        # The commit your checkout's index and files are still at while a lock held its
        # follow off (agentloop.vcs.git.behind); None when it follows the branch.
        self._behind: str | None = None
        self._started = time.time()

    def killed_attempt_kept(self, begun_as: str) -> KilledAttempt | None:
        """Where the checkout's prepare kept the killed attempt begun as `begun_as` it rolled
        back (GitVcs.killed_attempt_kept); None when it kept none, or no such backend."""
        return self._checkout_kept(begun_as) if self._checkout_kept is not None else None

    def _dirty(self) -> list[str]:
        return dirty(self.git)

    @classmethod
    def current(cls, root: Path, **kwargs: Any) -> "GitMainLine":
        """The branch the main checkout is on now."""
        return cls(root, current_branch(root), **kwargs)

    def tip(self) -> str:
        """The main line's commit now (read from the git dir's files where they tell);
        VcsError in one line when the branch is gone and not renamed to HEAD's."""
        found = self.tip_now()
        if found:
            return found
        code, out = self.git.code("rev-parse", "--verify", "-q", self.ref, codes=(0, 1))
        # `git branch -m` deletes the old name before it moves HEAD and writes the reflog line
        # that says where the branch went (_renamed): a landing that reads in between finds the
        # branch gone. A rename ends within milliseconds; a deleted branch stays gone.
        waited = time.monotonic() + RENAME_SETTLES
        while code and time.monotonic() < waited and not self.stopping():
            time.sleep(0.05)
            found = self.tip_now()
            if found:
                return found
            code, out = self.git.code("rev-parse", "--verify", "-q", self.ref, codes=(0, 1))
        if code:
            short = self.ref.removeprefix("refs/heads/")
            raise VcsError(f"branch {short}, which this run lands its tasks on, is gone (deleted,"
                           " or renamed while the checkout is on another branch): nothing more "
                           f"lands; `git branch {short} <commit>` or `git switch` to it and run "
                           "again (the lane's branch keeps what did not land)")
        return out.strip()

    def landed(self, commit: str) -> str | None:
        """The main line's copy of lane commit `commit`, if it landed already (as a copy, or
        as itself)."""
        code, out = self.git.code("rev-parse", "--verify", "-q", LANDED + commit, codes=(0, 1))
        if code == 0:
            return out.strip()
        code, _ = self.git.code("merge-base", "--is-ancestor", commit, self.ref,
                                codes=(0, 1, 128))
        return commit if code == 0 else None

    def land(self, commit: str, whole: bool = False, parent: str | None = None) -> str:
        """Replay lane commit `commit` onto the main line; return the new commit's sha.
        `whole`: everything `commit` holds that the main line lacks since their merge base (a
        person's resolution of a conflicted task, made on a rebased lane), not just its own
        change. `parent`: `commit` was just made on that commit, so it cannot have landed yet
        and lands as itself when that is still the tip. LandingHeld when the user's checkout
        keeps it waiting longer than `wait_limit`."""
        if parent is not None and not whole:
            with self._lock:
                if self._fast_forward(parent, commit):
                    return commit
        else:
            done = self.landed(commit)
            if done is not None:
                return done
        waiting = Waiting(self.root, self.wait_limit, self.on_wait, self.on_waits)
        while True:
            with self._lock:
                with waiting.held_if_stopped(self.stopping):  # a stop in a look again
                    self._catch_up()
                    old = self.tip()
                    with _objects_kept(commit):
                        new, files = self._replay(old, commit, whole)
                    busy, untracked = self._busy(files)
                if not busy:
                    # Noted until the checkout has followed: a kill in between leaves the
                    # branch ahead of the checkout, which the next run's preflight mends.
                    record = self.git_dir / RECORD
                    record.write_text(f"{self._behind} {new} {BEHIND}\n" if self._behind
                                      else f"{old} {new}\n")
                    with _objects_kept(commit):
                        swapped = self._swap(old, new, commit)
                    if swapped:
                        self._refresh(old, new, files)
                    self._noted(record, new if swapped else old)
                    if swapped:
                        return new
            with waiting.held_if_stopped(self.stopping):  # held, not lost
                if busy:
                    waiting.still(commit, busy, self.written_since(busy), _how(untracked))
                if self.stopping():
                    raise VcsError(f"stopped before commit {commit[:12]} reached {self.ref}")
                time.sleep(POLL_SECONDS if busy else 0)

    def fast_forward(self, old: str, new: str) -> bool:
        """`new`, made right on `old`, landed as itself (the fast-forward of `land`), under the
        landings' lock; False (nothing changed) where `land` would take its longer way. A serial
        run's lane runs it beside the next task's agent (agentloop.vcs.git.lane)."""
        with self._lock:
            return self._fast_forward(old, new)

    def may_fast_forward(self) -> bool:
        """Whether a fast-forward could move your checkout now, as far as a stat tells: not
        while it is behind, nor with a lock on its index (git would refuse it; the landing
        in turn, not one beside the next agent, then says why)."""
        return self._behind is None and not (self.git_dir / behind.LOCK).exists()

    def _fast_forward(self, old: str, new: str) -> bool:
        """The branch and the main checkout moved from `old` to `new` in one `git merge
        --ff-only`, when the checkout is on the branch at `old`; False (nothing changed) when
        it is not, or git refused (the user's edits on a path `new` changes)."""
        if not self._catch_up() or refs.where(self.git_dir, self.common_dir) != (self.ref, old):
            return False
        record = self.git_dir / RECORD
        record.write_text(f"{old} {new}\n")
        try:
            # No auto-maintenance after it, as after a task's commit (repo.COMMIT_ARGS): that
            # would be one more git process a task, started by this one.
            code, _ = self.git.code(
                "-c", "gc.auto=0", "-c", "maintenance.auto=false",
                "merge", "--ff-only", "-q", "--no-stat", new,
                env={"GIT_REFLOG_ACTION": f"agent-loop: landed {new[:12]}"}, codes=(0, 1, 128))
        finally:
            record.unlink(missing_ok=True)
        return code == 0

    def take_before(self) -> dict[str, tuple[int, int, int] | None] | None:
        """The user's uncommitted paths as the run found them, for the first lane that asks (a
        moment later: its first step's record); None after that."""
        taken, self._fresh_before = self._fresh_before, None
        return taken

    def stamps(self, listed: list[str] | None = None) -> dict[str, tuple[int, int, int] | None]:
        """The user's uncommitted paths now (or `listed`, as a status just read them), each
        with its stamp."""
        return {p: stamp(self.root / p) for p in (self._dirty() if listed is None else listed)}

    def written_since(self, paths: list[str]) -> list[str]:
        """Which of `paths` in the checkout changed after this run began (not an edit of the
        user's from before it: an agent writing outside its lane, or the user meanwhile)."""
        return [p for p in paths if stamp(self.root / p) != self.before.get(p)]

    def forget(self, commits: list[str]) -> None:
        """Drop the landed records of these lane commits (their tasks are saved as done)."""
        for commit in commits:
            self.git.code("update-ref", "-d", LANDED + commit, codes=(0, 1))

    def forget_all(self) -> None:
        """Drop every landed record (no task is left whose landing is in doubt)."""
        if refs.any_under(self.common_dir, LANDED) is False:
            return  # none, as the files say: no `git for-each-ref` to find that out
        out = self.git.code("for-each-ref", "--format=%(refname)", LANDED)[1]
        for ref in out.split():
            self.git.code("update-ref", "-d", ref, codes=(0, 1))

    def _replay(self, old: str, commit: str, whole: bool = False) -> tuple[str, list[str]]:
        """The main line's copy of `commit` on `old`: the change the task commit makes against
        its own parent, three-way merged with the main line. Never the lane's history since it
        branched off: that would replay the group's earlier tasks again, undoing a user's revert
        of one of them and conflicting on lines other groups changed since."""
        out = self.git.code("rev-parse", "--verify", "-q", f"{commit}^", codes=(0, 1))[1]
        parent = out.strip() or None
        if whole:
            code, out = self.git.code("merge-tree", "--write-tree", "--name-only",
                                      "--no-messages", old, commit, codes=(0, 1))
            tree = self._merged(code, out, commit, old)
        elif parent == old:
            tree = self.git.code("rev-parse", f"{commit}^{{tree}}")[1].strip()
        else:
            tree = self._merge(old, commit, parent)
        new = copy_commit(self.root, commit, tree, old)
        return new, changed_files(self.root, old, new)

    def _merge(self, old: str, commit: str, parent: str | None) -> str:
        """The tree of `old` with `commit`'s own change merged in. git 2.39 has no `merge-tree
        --merge-base`: the parent's tree becomes a root commit of its own, and the two sides
        are made its children, so it is the one merge base `merge-tree --write-tree` finds."""
        trees = self.git.code("rev-parse", f"{old}^{{tree}}", f"{commit}^{{tree}}",
                              f"{parent}^{{tree}}" if parent else EMPTY_TREE)[1].split()
        def made(tree: str, *parents: str) -> str:
            argv = ["commit-tree", tree, *(a for p in parents for a in ("-p", p))]
            return self.git.code(*argv, input="agent-loop: landing\n")[1].strip()
        base = made(trees[2])
        code, out = self.git.code("merge-tree", "--write-tree", "--name-only", "--no-messages",
                                  made(trees[0], base), made(trees[1], base), codes=(0, 1))
        return self._merged(code, out, commit, old)

    def _merged(self, code: int, out: str, commit: str, old: str) -> str:
        """The tree `merge-tree --write-tree` made; IntegrationConflict when it conflicted."""
        lines = out.splitlines()
        if code == 1:
            raise IntegrationConflict(commit, tuple(dict.fromkeys(f for f in lines[1:] if f)),
                                      old)
        return lines[0].strip()

    def _busy(self, files: list[str]) -> tuple[list[str], list[str]]:
        """Which of `files` the user has edited, staged or left untracked in the checkout, and
        which of those are untracked."""
        if not files or not self._checked_out():
            return [], []
        if self._behind is not None:
            return self._busy_behind(files)
        out = self.git.code("status", "--porcelain", "-z", "--untracked-files=all",
                  "--ignored=no", "--", *files)[1]
        entries = [entry for entry in out.split("\0") if len(entry) > 3]
        return (sorted({entry[3:] for entry in entries}),
                sorted({entry[3:] for entry in entries if entry.startswith("?? ")}))

    def _busy_behind(self, files: list[str]) -> tuple[list[str], list[str]]:
        """`_busy` while the checkout is behind: against the commit it is at, not the branch
        (whose later tasks' files `git status` shows as staged deletions, nobody's edits). No
        command takes the index lock."""
        at = self._behind or ""
        look = ("--no-optional-locks",)
        staged = self.git.code(*look, "diff", "--cached", "--name-only", "-z", at, "--",
                               *files)[1]
        edited = self.git.code(*look, "diff", "--name-only", "-z", "--", *files)[1]
        untracked = self.git.code(*look, "ls-files", "-z", "--others", "--exclude-standard",
                                  "--", *files)[1]
        new = [p for p in untracked.split("\0") if p]
        return sorted({p for p in (staged + "\0" + edited).split("\0") if p} | set(new)), \
            sorted(new)

    def _noted(self, record: Path, tip: str) -> None:
        """The landing's record kept while the checkout is behind (what the next run's
        preflight finishes, finish_landing), gone once it follows."""
        if self._behind is not None:
            record.write_text(f"{self._behind} {tip} {BEHIND}\n")
        else:
            record.unlink(missing_ok=True)

    def yours(self, paths: list[str]) -> list[str]:
        """Of the paths a look at the checkout found uncommitted, those that are not the
        checkout behind its branch (the tasks' files it has yet to follow to: nobody's
        edits)."""
        at = self._behind
        if at is None or not paths:
            return paths
        out = self.git.code("diff-tree", "-r", "-z", "--name-only", "--no-commit-id", at,
                            self.tip())[1]
        lagging = set(out.split("\0"))
        return [p for p in paths if p not in lagging]

    def _catch_up(self) -> bool:
        """The checkout, behind since a lock held its follow off, follows the branch now if
        it can; whether it is not behind (now)."""
        at = self._behind
        if at is None:
            return True
        tip = self.tip()
        if not self._checked_out() or tip == at:
            self._behind = None  # you switched away (or back): the checkout is yours
        else:
            done = self.git.run("read-tree", "-m", "-u", at, tip, codes=(0, 128))
            if done.returncode:
                return False
            self._behind = None
            self.on_wait(behind.followed(tip))
        (self.git_dir / RECORD).unlink(missing_ok=True)
        return True

    def settle(self) -> None:
        """At the run's end: a checkout still behind its branch follows it once the lock goes
        (a moment's wait for a git of yours); a lock that is nobody's (agentloop.vcs.git.behind
        .leftover) goes first. Anything else is said, with the repair."""
        with self._lock:
            if self._behind is None:
                return
            until = time.monotonic() + behind.GRACE_SECONDS
            while not self._catch_up() and time.monotonic() < until:
                time.sleep(0.1)
            if self._behind is None:
                return
            lock = self.git_dir / behind.LOCK
            if behind.leftover(self.root, self.git_dir, self._started):
                lock.unlink(missing_ok=True)
                self.on_wait(f"removed {lock}, which appeared while agents ran and no process "
                             "holds (an agent's leftover, or a killed git's)")
                if self._catch_up():
                    return
            self.on_wait(behind.repair(self.root, self.git_dir, self._behind, self.tip()))

    def _swap(self, old: str, new: str, commit: str) -> bool:
        """Move the branch from `old` to `new`; False when it is no longer at `old`."""
        script = (f"start\nupdate {self.ref} {new} {old}\ncreate {LANDED}{commit} {new}\n"
                  "prepare\ncommit\n")
        args = ("update-ref", "--stdin", "-m", f"agent-loop: landed {commit[:12]}")
        code, _ = self.git.code(*args, input=script, codes=(0, 128))
        if code == 0:
            return True
        if self.tip() != old:
            return False  # moved meanwhile: read it again
        self.git.code(*args, input=script)  # not moved: a lock, say; its error, never a loop
        return True

    def _checked_out(self) -> bool:
        found = refs.where(self.git_dir, self.common_dir)
        if found is not None:
            return found[0] == self.ref
        code, out = self.git.code("symbolic-ref", "-q", "HEAD", codes=(0, 1))
        return code == 0 and out.strip() == self.ref

    def elsewhere(self) -> str | None:
        """The branch the tasks land on (refs/heads/...) when the main checkout is not on it now
        (you switched mid-run), where a task's commit is to be reverted; None when it is."""
        return None if self._checked_out() else self.ref

    def _tell_switched(self) -> None:
        """Once a run: the user's checkout left the branch, which the tasks go on landing on,
        so their files are not in the checkout (a person who switched mid-run looks there)."""
        if self._switch_told:
            return
        self._switch_told = True
        found = refs.where(self.git_dir, self.common_dir)
        there = (f"on {found[0].removeprefix('refs/heads/')}" if found and found[0]
                 else "elsewhere")
        branch = self.ref.removeprefix("refs/heads/")
        self.on_wait(f"your checkout is {there} now, not on {branch}: the tasks go on landing "
                     f"on {branch}, where `git switch {branch}` finds them")

    def tip_now(self) -> str | None:
        """The main line's commit, read from the git dir's files; None when they cannot tell.
        A branch gone because you renamed it (`git branch -m`) with the checkout on it is
        followed to its new name."""
        found = refs.branch_tip(self.common_dir, self.ref)
        if found == "" and self._renamed():
            found = refs.branch_tip(self.common_dir, self.ref)
        return found or None

    def _renamed(self) -> bool:
        """Whether HEAD's reflog says the branch was renamed to the one HEAD is on now: then
        it is the main line (self.ref moves to it)."""
        try:
            log = (self.git_dir / "logs" / "HEAD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        said = f"\tBranch: renamed {self.ref} to "
        new = next((line.split(said, 1)[1].strip() for line in reversed(log.splitlines())
                    if said in line), None)
        if new is None or not new.startswith("refs/heads/"):
            return False
        here = refs.where(self.git_dir, self.common_dir)
        head = here[0] if here is not None else self.git.code(
            "symbolic-ref", "-q", "HEAD", codes=(0, 1))[1].strip()
        if head != new:
            return False
        self.on_wait(f"branch {self.ref.removeprefix('refs/heads/')} was renamed to "
                     f"{new.removeprefix('refs/heads/')}: the tasks land there")
        self.ref = new
        return True

    def _refresh(self, old: str, new: str, files: list[str]) -> None:
        if not self._checked_out():
            self._tell_switched()  # their checkout is theirs: the tasks go on to the branch
            return
        if self._behind is not None:
            return  # behind since a lock held the follow off: it catches up, not this step
        done = self.git.run("read-tree", "-m", "-u", old, new, codes=(0, 128))
        if done.returncode and behind.locked(self.git_dir, done.stderr or ""):
            self._behind = old
            self.on_wait(behind.said(self.git_dir))
        elif done.returncode:
            self.on_wait(f"{self.ref} moved to {new[:12]}, but the checkout could not follow "
                         f"(a file of {', '.join(files[:5])} changed meanwhile); your files are "
                         "as you left them: `git status` shows the difference")


# What git says of an object it was handed and no longer has (`commit-tree`, `update-ref`).
_OBJECT_GONE = ("is not a valid object", "nonexistent object", "bad object",
                "unable to read tree", "could not parse commit")


@contextlib.contextmanager
def _objects_kept(commit: str) -> Iterator[None]:
    """A landing of lane commit `commit` whose git objects, written a moment before and named
    by no ref yet, were deleted under it: said in one line, git's own error left out. An
    agent's `git gc --prune=now` (in its lane, which shares the repository's objects) prunes
    just such objects. The commit stays on its lane's branch and the run's record says it is
    landing: the next run lands it first."""
    try:
        yield
    except VcsError as exc:
        if not any(words in str(exc) for words in _OBJECT_GONE):
            raise
        raise VcsError(f"git objects this landing had just written were removed before it "
                       f"ended (a `git gc --prune=now`, an agent's in its lane say, deletes new "
                       f"objects nothing names yet): task commit {commit[:12]} is not landed and "
                       "stays on its lane's branch; run again to land it") from None


def _how(untracked: list[str]) -> str:
    """What lets a waiting landing go on: a plain `git stash` leaves an untracked file where it
    is, in the way of the task's file of that name. A later `git stash pop` refuses while any
    file it holds untracked is there again (the task's, the plan the run put back): the
    stash's untracked files are its third parent, from which a file comes back alone."""
    if not untracked:
        return "commit or stash them and it lands on the branch"
    return (f"commit or stash them (an untracked file such as {untracked[0]} with `git stash "
            "-u`, or move it away) and it lands on the branch; `git stash pop` then refuses on "
            f"the files that are back (the task's, the plan): `git checkout 'stash@{{0}}^3' -- "
            f"{untracked[0]}` brings yours back")


def current_branch(root: Path) -> str:
    """The branch (refs/heads/...) the checkout at `root` is on; VcsError when detached."""
    found = refs.where(root / ".git", root / ".git") if (root / ".git").is_dir() else None
    if found is not None and found[0] is not None:
        return found[0]
    code, out = Git(root).code("symbolic-ref", "-q", "HEAD", codes=(0, 1))
    if code:
        raise VcsError("--parallel needs the main checkout on a branch (HEAD is detached): "
                       "`git switch <branch>` first")
    return out.strip()


def copy_commit(root: Path, commit: str, tree: str, parent: str) -> str:
    """A commit of `tree` on `parent` with `commit`'s author, date and message, byte for byte."""
    git = Git(root)
    raw = git.code("cat-file", "commit", commit)[1]
    head, _, message = raw.partition("\n\n")
    author = next(line for line in head.splitlines() if line.startswith("author "))
    who, _, when = author[len("author "):].rpartition("> ")
    name, _, email = who.partition(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when}
    return git.code("commit-tree", tree, "-p", parent, input=message, env=env)[1].strip()


def changed_files(root: Path, old: str, new: str) -> list[str]:
    """The paths that differ between two commits."""
    out = Git(root).code("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", old, new)[1]
    return [f for f in out.split("\0") if f]


def finish_landing(root: Path, git_dir: Path) -> str | None:
    """A landing a kill cut short after the branch moved and before the checkout followed: the
    checkout follows now (the files the commit changed, nothing else); or (a fast-forward's)
    after the checkout followed and before the branch moved: the branch moves now; or (a
    fast-forward's) after it wrote some of the commit's files and before its index: the branch
    moves and the checkout follows now. A note, or None."""
    git = Git(root)
    record = git_dir / RECORD
    try:
        old, new, *mark = record.read_text().split()
    except FileNotFoundError:
        return _follow_unrecorded(root, git_dir)
    except (OSError, ValueError):
        return None
    note = None
    head = git.code("rev-parse", "-q", "--verify", "HEAD", codes=(0, 1))[1].strip()
    index_old = git.code("diff", "--cached", "--quiet", old, codes=(0, 1))[0] == 0
    written = head == old and index_old and _half_written(git, root, old, new)
    if written:
        # `git merge --ff-only` writes the files, then its index, then moves the branch: cut
        # short in between, the commit's files stood in the checkout as untracked or modified
        # ones, and its landing waited on them as on your edits (for the lane-wait, 600 s).
        # Nothing else is in them: the branch moves, and the checkout follows as below.
        git.code("update-ref", "-m", f"agent-loop: landed {new[:12]}", "HEAD", new, old)
        head = new
    # Behind since a lock held a landing's follow off (agentloop.vcs.git.behind): the index
    # holds `old` where the branch differs, your staged edits elsewhere.
    lagging = head == new and (mark == [BEHIND] or not index_old) \
        and behind.lags(git, old, new) is not None
    if head == new and (index_old or lagging):
        code, _ = git.code("read-tree", "-m", "-u", old, new, codes=(0, 128))
        if code and lagging and not _half_written(git, root, old, new):
            # Not a follow cut short: your own file stands in the way on a path it changes.
            record.unlink(missing_ok=True)
            return behind.repair(root, git_dir, old, new, in_the_way=True)
        if code:  # cut short halfway through its files: they are the commit's, set them so
            for path in changed_files(root, old, new):
                there = git.code("cat-file", "-e", f"{new}:{path}", codes=(0, 1, 128))[0] == 0
                if there:
                    git.code("checkout", new, "--", path)
                else:
                    git.code("rm", "-q", "-f", "--ignore-unmatch", "--", path)
        note = (f"a landing was cut short as it wrote the task's files into the checkout; the "
                f"branch and the checkout follow now ({new[:12]})" if written else
                f"your checkout was behind its branch (a lock on its index held a landing's "
                f"follow off); it follows now ({new[:12]}), your edits kept" if lagging else
                f"a landing was cut short before the checkout followed the branch; it follows "
                f"now ({new[:12]})")
    elif head == old and not index_old \
            and git.code("diff", "--cached", "--quiet", new, codes=(0, 1))[0] == 0:
        git.code("update-ref", "-m", f"agent-loop: landed {new[:12]}", "HEAD", new, old)
        note = (f"a landing was cut short after the checkout took the task's files; the branch "
                f"follows now ({new[:12]})")
    record.unlink(missing_ok=True)
    return note


def _follow_unrecorded(root: Path, git_dir: Path) -> str | None:
    """A checkout an earlier version left behind its branch with no record of it
    (agentloop.vcs.git.behind.unrecorded) follows now, your edits kept; a note, or None."""
    found = behind.unrecorded(root, git_dir)
    if found is None:
        return None
    at, tip = found
    code, _ = Git(root).code("read-tree", "-m", "-u", at, tip, codes=(0, 128))
    if code:
        return behind.repair(root, git_dir, at, tip, in_the_way=True)
    return (f"your checkout was behind its branch since {at[:12]} (a landing's follow that a "
            f"lock on its index held off); it follows now ({tip[:12]}), your edits kept")


def _half_written(git: Git, root: Path, old: str, new: str) -> bool:
    """Whether the checkout holds some of the paths `new` changes from `old` as `new` has them
    and every other one as `old` has it: what a fast-forward cut short leaves, and nobody's
    edit (a file of any other content, or a folder: False). A path reached through a link to
    a folder reads as missing, as git's side of a path added or deleted does."""
    out = git.code("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new)[1]
    fields = out.split("\0")
    some = False
    for head, path in zip(fields[0::2], fields[1::2]):
        parts = head.lstrip(":").split()
        if len(parts) < 4 or not path:
            return False
        before, after = (parts[0], parts[2]), (parts[1], parts[3])
        here = _entry(root, path)
        if here == after != before:
            some = True
        elif here != before:
            return False
    return some


def _entry(root: Path, path: str) -> tuple[str, str] | None:
    """The checkout's `path` as a tree entry (mode, blob sha) of its bytes as they are; git's
    zeros when it is missing; None for anything no blob is (a folder, a fifo)."""
    from agentloop.files.digest import sha1
    from agentloop.vcs.git.files import MISSING, state_of

    state = state_of(root, path)
    if state == MISSING:
        return "000000", "0" * 40
    if state.startswith("link:"):
        target = os.fsencode(state[len("link:"):])
        return "120000", sha1(b"blob %d\0" % len(target) + target).hexdigest()
    mode, _, sha = state.partition(":")
    return (mode, sha) if sha else None
