"""git: putting a lane's task commits onto the main line without touching the user's checkout.

The main line is the branch the main checkout was on when the run began. Each task commit of a
lane is replayed onto it as one new commit (same tree change, author, date and message): `git
merge-tree --write-tree` merges it with the main line in memory, `git commit-tree` makes the
commit (agentloop.vcs.git.landing_copy), and one `git update-ref --stdin` transaction moves the
branch from the commit it was just read at (compare-and-swap: a branch the user moved meanwhile
is read again) and records `refs/agent-loop/landed/<lane commit>`, so a run killed at any
moment never lands a task twice. Those marks live in the common git dir, which every checkout
of the repository shares: a linked checkout's (`git worktree add ../wt`) go under a name of its
own (`landed-wt.1a2b3c/`, marks_of), so that a commit alike in both (same tree, parent, message,
author and time) is no landing of the other's, and one checkout's cleanup leaves the other's be.

The main checkout then follows with `git read-tree -m -u OLD NEW`, which changes only the paths
the commit changed and keeps everything else the user has, staged or not. A lock on the
checkout's index (`.git/index.lock`: a git of the user's, an agent's leftover) holds that off:
the checkout stays behind, said once, and follows the branch once the lock goes
(agentloop.vcs.git.behind). Until it has followed, a record in the git dir lets the next run
finish a landing a kill cut short (agentloop.vcs.git.landing_record). When the user's own
uncommitted edits (or untracked files) sit on a path the commit changes, the branch does not
move: the lane waits, saying which files once, until the user commits or stashes them
(agentloop.vcs.git.in_the_way). A branch you rename meanwhile is followed to its new name
(agentloop.vcs.git.branch_rename); objects a gc pruned under a landing are said in one line
(agentloop.vcs.git.pruned).

The common case takes one process: a lane commit made right on the main line's tip, with the
main checkout on that branch (read from the git dir's files), lands as itself by `git merge
--ff-only`, which moves the branch from the tip it read (compare-and-swap, as above) and the
checkout with it, keeps every other edit of the user's, staged or not, and refuses, changing
nothing, when one sits on a path the commit changes. A refusal, or anything unusual, takes the
way above, which says what it waits for. A commit that landed as itself needs no landed record:
it is on the branch.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any, Callable

from agentloop.errors import VcsError
from agentloop.files.shown import typed
from agentloop.vcs.git import behind, in_the_way, landing_copy, moved_back, refs
from agentloop.vcs.git.behind import BEHIND, RECORD
from agentloop.vcs.git.branch_rename import RENAME_SETTLES, renamed_to
from agentloop.vcs.git.pruned import objects_kept
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.your_checkout import dirty, stamp
from agentloop.vcs.landing import POLL_SECONDS, WAIT_LIMIT, Waiting
from agentloop.vcs.protocol import KilledAttempt

LANDED = "refs/agent-loop/landed/"


def marks_of(root: Path, key: str = "") -> str:
    """Where the landings of the checkout at `root` leave their marks: with `key` (the run's
    plan key, agentloop.vcs.lanes.plan_key, which names a linked checkout too), a folder of that
    plan's own, so that another plan's run in the same checkout never counts or deletes them.
    Without it, the name the marks had before: LANDED for the main checkout (the released
    version's, every plan's), a folder of its own for a linked one, named as its lanes are."""
    from agentloop.files.digest import sha1
    from agentloop.vcs.lanes import linked_checkout

    if key:
        return f"{LANDED[:-1]}-{key}/"
    checkout = linked_checkout(root)
    if not checkout:
        return LANDED
    slug = re.sub(r"[^a-z0-9]+", "-", checkout.casefold()).strip("-")[:24].strip("-")
    hashed = sha1(checkout.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    return f"{LANDED[:-1]}-{slug or 'checkout'}.{hashed}/"


class GitMainLine:
    """The branch every lane's tasks land on, and the one lock their landings take in turn."""

    def __init__(self, root: Path, ref: str, on_wait: Callable[[str], None] | None = None,
                 stopping: Callable[[], bool] | None = None,
                 wait_limit: float = WAIT_LIMIT, dirs: tuple[Path, Path] | None = None,
                 listed: list[str] | None = None,
                 checkout_kept: Callable[[str], KilledAttempt | None] | None = None,
                 key: str = "") -> None:
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
        self.marks = marks_of(root, key)
        # The name this checkout's marks had before they were the plan's (a run killed by an
        # agent-loop before this one left them there): read and deleted, never written.
        self._older = marks_of(root)
        # The checkout's backend's killed_attempt_kept: an attempt a killed run left there,
        # which its prepare rolled back, is the work of a task that now runs in a lane.
        self._checkout_kept = checkout_kept
        # The commit your checkout's index and files are still at while a lock held its
        # follow off (agentloop.vcs.git.behind); None when it follows the branch.
        self._behind: str | None = None
        self._started = time.time()
        # The branch's commit as the run found it (from the git dir's files: no process), which
        # a move back of this run's own leaves.
        self._began_at = refs.branch_tip(self.common_dir, self.ref) or None

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
        # Gone in the middle of a rename, maybe (agentloop.vcs.git.branch_rename).
        waited = time.monotonic() + RENAME_SETTLES
        while code and time.monotonic() < waited and not self.stopping():
            time.sleep(0.05)
            found = self.tip_now()
            if found:
                return found
            code, out = self.git.code("rev-parse", "--verify", "-q", self.ref, codes=(0, 1))
        if code:
            short = self.ref.removeprefix("refs/heads/")
            # The checkout on it still: a branch with no commit yet (a new repository, an
            # orphan branch), which --parallel's lanes have nothing to start from.
            if self.git.code("symbolic-ref", "-q", "HEAD", codes=(0, 1))[1].strip() == self.ref:
                raise VcsError(f"branch {short}, which this run lands its tasks on, has no "
                               "commit yet for --parallel's lanes to start from: commit your "
                               "files first (`git add -A && git commit`), or run without "
                               "--parallel (the agent then works in your checkout)")
            raise VcsError(f"branch {short}, which this run lands its tasks on, is gone (deleted,"
                           " or renamed while the checkout is on another branch): nothing more "
                           f"lands; `git branch {typed(short)} <commit>` or `git switch` to it "
                           "and run again (the lane's branch keeps what did not land)")
        return out.strip()

    def landed(self, commit: str) -> str | None:
        """The main line's copy of lane commit `commit`, if it landed already (as a copy, or
        as itself)."""
        code, out = self.git.code("rev-parse", "--verify", "-q", self.marks + commit,
                                codes=(0, 1))
        if code == 0:
            return out.strip()
        if self._older != self.marks:
            code, out = self.git.code("rev-parse", "--verify", "-q", self._older + commit,
                                      codes=(0, 1))
            if code == 0:
                return out.strip()
        if self._older != LANDED:
            # A linked checkout's mark an agent-loop before its own names left under the main
            # checkout's: its copy counts only where it is on this branch (the main checkout's
            # mark of a commit alike is not).
            code, out = self.git.code("rev-parse", "--verify", "-q", LANDED + commit,
                                      codes=(0, 1))
            if code == 0 and self._on_branch(out.strip()):
                return out.strip()
        return commit if self._on_branch(commit) else None

    def _on_branch(self, commit: str) -> bool:
        code, _ = self.git.code("merge-base", "--is-ancestor", commit, self.ref,
                                codes=(0, 1, 128))
        return code == 0

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
                    # The commit, not the branch's name: a rename meanwhile is no damage.
                    with objects_kept(self.git, old, commit):
                        new, files = self._replay(old, commit, whole)
                    busy, untracked = self._busy(files, new)
                    blocked = None if busy else self._blocked()
                if not busy and blocked is None:
                    # Noted until the checkout has followed: a kill in between leaves the
                    # branch ahead of the checkout, which the next run's preflight mends.
                    record = self.git_dir / RECORD
                    record.write_text(f"{self._behind} {new} {BEHIND}\n" if self._behind
                                      else f"{old} {new}\n")
                    try:
                        with objects_kept(self.git, old, commit):
                            swapped = self._swap(old, new, commit)
                    except VcsError:
                        # The branch did not move: a record of this landing would have the
                        # next run finish one that never was (its `new` pruned, say).
                        self._noted(record, old)
                        raise
                    refused = self._refresh(old, new, files, commit) if swapped else None
                    self._noted(record, new if swapped and refused is None else old)
                    if swapped and refused is None:
                        return new
                    blocked = refused
            with waiting.held_if_stopped(self.stopping):  # held, not lost
                if busy:
                    waiting.still(commit, busy, self.written_since(busy),
                                  in_the_way.how(untracked, self.root))
                elif blocked is not None:
                    waiting.blocked(commit, *blocked)
                if self.stopping():
                    raise VcsError(f"stopped before commit {commit[:12]} reached {self.ref}")
                time.sleep(POLL_SECONDS if busy or blocked else 0)

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
        # Under the older names too, where the files say any may be (no process where none):
        # a linked checkout's own, and the main checkout's that landed counts where its copy is
        # on this branch (left, it would count there for a lane commit alike).
        older = [name for name in dict.fromkeys((self._older, LANDED))
                 if name != self.marks and refs.any_under(self.common_dir, name) is not False]
        for commit in commits:
            self.git.code("update-ref", "-d", self.marks + commit, codes=(0, 1))
            for name in older:
                if name != self._older:  # LANDED, in a linked checkout
                    code, out = self.git.code("rev-parse", "--verify", "-q", name + commit,
                                              codes=(0, 1))
                    if code != 0 or not self._on_branch(out.strip()):
                        continue  # none, or the main checkout's own for a commit alike
                self.git.code("update-ref", "-d", name + commit, codes=(0, 1))

    def forget_all(self) -> None:
        """Drop every landed record of this plan in this checkout (no task is left whose
        landing is in doubt); another plan's or checkout's are its own, and so are those under
        the older name, which may be another plan's (forget drops this run's there)."""
        if refs.any_under(self.common_dir, self.marks) is False:
            return  # none, as the files say: no `git for-each-ref` to find that out
        out = self.git.code("for-each-ref", "--format=%(refname)", self.marks)[1]
        for ref in out.split():
            self.git.code("update-ref", "-d", ref, codes=(0, 1))

    def _replay(self, old: str, commit: str, whole: bool = False) -> tuple[str, list[str]]:
        """The main line's copy of `commit` on `old`, and the paths it changes
        (agentloop.vcs.git.landing_copy.replay)."""
        return landing_copy.replay(self.root, old, commit, whole)

    def _busy(self, files: list[str], new: str) -> tuple[list[str], list[str]]:
        """Which of `files` the user has edited, staged or left untracked in the checkout, and
        which of those are untracked (agentloop.vcs.git.in_the_way). A file that holds just
        what `new` has for it, in the index and on disk, is in nobody's way: a fast-forward of
        this landing a rename of the branch cut short left it so (git had written the files,
        then found no branch to move)."""
        if not files or not self._checked_out():
            return [], []
        busy, untracked = in_the_way.edited(self.git, files, self._behind)
        if busy and self._behind is None:
            there = in_the_way.already(self.git, new, [p for p in busy if p not in untracked])
            busy = [p for p in busy if p not in there]
        return busy, untracked

    def _blocked(self) -> tuple[str, str] | None:
        """What keeps any landing off the branch your checkout is on, whatever it changes, and
        how you end it: your merge (cherry-pick, revert) stopped on a conflict. Moved under
        it, the branch would leave the checkout's index behind, and the commit that ends your
        merge would take the task back out without a word."""
        under_way = in_the_way.in_progress(self.git_dir)
        if under_way is None or not self._checked_out():
            return None
        return (f"{under_way[0]} in progress in {self.root}",
                f"{in_the_way.finish(under_way[1])} and it lands on the branch")

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
        script = (f"start\nupdate {self.ref} {new} {old}\ncreate {self.marks}{commit} {new}\n"
                  "prepare\ncommit\n")
        args = ("update-ref", "--stdin", "-m", f"agent-loop: landed {commit[:12]}")
        code, _ = self.git.code(*args, input=script, codes=(0, 128))
        if code == 0:
            return True
        ref = self.ref
        if self.tip() != old or self.ref != ref:
            return False  # moved or renamed meanwhile: read it again
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

    def moved_back_from(self) -> str | None:
        """The commit the branch was moved back from by its last move, made while this run
        worked (a stop's repair takes it back there), with your checkout on it; None otherwise."""
        if not self._checked_out():
            return None
        return moved_back.moved_from(self.git, self.ref, self._began_at)

    def holds(self, path: str, data: bytes, at: str | None = None) -> bool:
        """Whether the branch (or commit `at`) holds `data`, committed, at `path` (relative to
        the root): one git process, asked only once your checkout lost a file the run keeps (its
        plan)."""
        import hashlib

        code, out = self.git.code("rev-parse", "-q", "--verify", f"{at or self.ref}:{path}",
                                  codes=(0, 1, 128))
        blob = b"blob %d\0" % len(data) + data
        ours = (hashlib.sha1 if len(out.strip()) == 40 else hashlib.sha256)(blob).hexdigest()
        return code == 0 and out.strip() == ours

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
                     f"on {branch}, where `git switch {typed(branch)}` finds them")

    def tip_now(self) -> str | None:
        """The main line's commit, read from the git dir's files; None when they cannot tell.
        A branch gone because you renamed it (`git branch -m`) with the checkout on it is
        followed to its new name."""
        found = refs.branch_tip(self.common_dir, self.ref)
        if found == "" and self._renamed():
            found = refs.branch_tip(self.common_dir, self.ref)
        return found or None

    def _renamed(self) -> bool:
        """Whether the branch was renamed to the one HEAD is on now
        (agentloop.vcs.git.branch_rename): then it is the main line (self.ref moves to it)."""
        new = renamed_to(self.git, self.git_dir, self.common_dir, self.ref)
        if new is None:
            return False
        self.on_wait(f"branch {self.ref.removeprefix('refs/heads/')} was renamed to "
                     f"{new.removeprefix('refs/heads/')}: the tasks land there")
        self.ref = new
        return True

    def _refresh(self, old: str, new: str, files: list[str],
                 commit: str) -> tuple[str, str] | None:
        """The checkout follows the branch just moved from `old` to `new`. Where git refuses
        (a conflict of yours in the index, a file of yours in the way), the branch goes back to
        `old` and what keeps the landing off it is returned, as `_blocked` says it: a branch
        left ahead of its index would have your next commit take the task back out."""
        if not self._checked_out():
            self._tell_switched()  # their checkout is theirs: the tasks go on to the branch
            return None
        if self._behind is not None:
            return None  # behind since a lock held the follow off: it catches up, not this step
        done = self.git.run("read-tree", "-m", "-u", old, new, codes=(0, 128))
        if done.returncode and behind.locked(self.git_dir, done.stderr or ""):
            self._behind = old
            self.on_wait(behind.said(self.git_dir))
        elif done.returncode:
            said = next((line.removeprefix("error: ").removeprefix("fatal: ").strip()
                         for line in (done.stderr or "").splitlines() if line.strip()),
                        "git refused")
            script = (f"start\nupdate {self.ref} {old} {new}\ndelete {self.marks}{commit}\n"
                      "prepare\ncommit\n")
            if self.git.code("update-ref", "--stdin", "-m", "agent-loop: your checkout refused "
                             f"{commit[:12]}", input=script, codes=(0, 128))[0] == 0:
                return (f"your checkout {self.root} (git will not take the task's files into "
                        f"it now: {said})", "see why with `git status`, resolve it and it lands "
                        "on the branch")
            self.on_wait(f"{self.ref} moved to {new[:12]}, but the checkout could not follow "
                         f"(a file of {', '.join(files[:5])} changed meanwhile); your files are "
                         "as you left them: `git status` shows the difference")
        return None


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


