"""git in a lane of a parallel run: the group's tasks are committed in its own worktree, as a
sequential run commits them (agentloop.vcs.git.backend, held here), and each one lands on the main
line as it finishes (agentloop.vcs.git.mainline): the task's change as the run records it is the
main line's commit."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs.check import (
    GitLaneRecord,
    Kind,
    LaneBreach,
    Listed,
    check_git_lane,
    dirty,
    dirty_beside,
    stamp,
    written,
)
from agentloop.vcs.git import reflog, refs, stash
from agentloop.vcs.git.agent_in_checkout import agent_moved_head
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.git.landing_beside import Beside
from agentloop.vcs.git.mainline import GitMainLine, changed_files, copy_commit
from agentloop.vcs.git.run import Git
from agentloop.vcs.landing import IntegrationConflict, markers_left
from agentloop.vcs.lanes import BRANCH_PREFIX
from agentloop.vcs.protocol import Change, KilledAttempt
from agentloop.vcs.rewritten import carried, rewritten


def _raise(exc: Exception) -> Listed:
    raise exc


def _nothing() -> None:
    pass


class LaneGit:
    """One group's worktree; finished tasks land on `main`."""

    name = "git"
    lost_hint = GitVcs.lost_hint

    def __init__(self, worktree: Path, task_file: Path, main: GitMainLine, made: bool = False
                 ) -> None:
        # A lane left by a killed run may hold files of an attempt that never finished; the
        # open-attempt record rolls them back, and anything else is no task's. `made`: the
        # worktree was just checked out by agent-loop, so nothing in it is uncommitted.
        # Its git dir is named in its `.git` file, its common dir is the main line's.
        own = refs.worktree_git_dir(worktree)
        self._dirs = (own, main.common_dir) if own is not None else None
        self.work = GitVcs(worktree, task_file, allow_dirty=True, lane=True, place=self._dirs,
                           made=made)
        self.main = main
        self.lane_commits: list[str] = []   # what landed, for the lane's records to be dropped
        self.landed: list[str] = []         # the main line's copies of them
        # What the lane looked like when its step began (agentloop.vcs.check).
        self.record: GitLaneRecord | None = None
        self.branch = f"refs/heads/{BRANCH_PREFIX}{worktree.name}"
        # The user's uncommitted paths as the last step's check saw them: the next step's
        # record, without a second look at the checkout.
        # (The first step's: what the main line found as the run began, if no lane took it.)
        self._seen: dict[str, tuple[int, int, int] | None] | None = main.take_before()
        # The main line's commit at which every finished task's commit was last known to be
        # on it (agentloop.vcs.git.backend.GitVcs.missing does the same in a checkout).
        self._sound: str | None = None
        # The last step's landing, while it runs beside the next task's agent (finish_beside).
        self._beside: Beside | None = None
        # The user's uncommitted paths as the last step's check looked at them beside its
        # commit; None when it did not look (the landing then never runs beside).
        self._looked: list[str] | None = None
        # The task commit the step made here (made), from its commit to the next begin.
        self._made: Change | None = None
        self._finishing = False  # inside the step's commit (_commit), until it returns
        # The stash list's newest entry as the step began (agentloop.vcs.git.stash).
        self._stash: str | None = None
        # The main line's commit whose tree the lane's HEAD holds, as far as the lane knows
        # without asking git (behind): its landings and catch-ups move it; None: not known.
        self._synced: str | None = None

    @property
    def root(self) -> Path:
        """The lane's worktree."""
        return self.work.root

    @property
    def git(self) -> Git:
        """The lane worktree's git runner."""
        return self.work.git

    def prepare(self) -> list[str]:
        """The worktree opened, an attempt a killed run left in it dealt with; LaneBreach when
        an agent left it off its branch (before anything in it is rolled back or committed)."""
        self.check(GitLaneRecord(self.root, self.branch, None, self.main.root, self.main.ref,
                                 dirs=self._dirs))
        return self.work.prepare()

    def expect_message(self, message: str) -> None:
        """The message the next task will most likely be committed with (GitVcs's)."""
        self.work.expect_message(message)

    def begin(self, message: str) -> Change:
        """Start a task's change in the worktree, and note what the lane looks like."""
        change = self.work.begin(message)
        seen, self._seen = self._seen, None
        self._made, self._finishing = None, False
        self._stash = stash.top(self.main.common_dir)
        logs = reflog.logs(self.main.git_dir, self.main.common_dir, self.main.ref)
        self.record = GitLaneRecord(self.root, self.branch, self.work.tree.head(),
                                    self.main.root, self.main.ref, tuple(self.landed),
                                    seen if seen is not None else self.main.stamps(),
                                    self.work.tree.dirs(), self._main_at(),
                                    tuple(zip(logs, reflog.ends(logs))))
        return change

    def _main_at(self) -> tuple[str, ...]:
        """The main line's commit now, which the step's check finds it still holds, then the
        commit a landing beside the step moves it to (read from files: no process here, but
        where they cannot tell); none when the branch is gone (its landing says so)."""
        tip = self.main.tip_now() or self.main.git.sha(self.main.ref)
        if tip is None:
            return ()
        pending = self._beside
        return (tip, pending.done.change_id) if pending is not None else (tip,)

    def check(self, record: GitLaneRecord | None = None,
              commit: Callable[[Callable[[], None]], Change] | None = None) -> Change | None:
        """Trust nothing the agent could touch: LaneBreach when it did something outside its
        task that stops the group; what only needs saying is said. `commit`: the step's
        commit in the lane, made (its Change returned) while the user's checkout is looked at,
        once nothing that stops the group was found; it calls the function it is given once
        its first git command has started (that look's git is started then, behind it). What
        is said of a step that made its commit goes as the commit's note (its task's record
        keeps it, for the closing lines and `--status`), else it is said at once."""
        record = record or self.record
        self._looked = None
        stash_before = self._stash
        said = [self._stashed()]
        breach = check_git_lane(record) if record is not None else None
        if breach is not None and breach.stops:
            if breach.kind in (Kind.MAIN_REWOUND, Kind.AGENT_MOVED_MAIN) and record is not None:
                # A `reset --hard` takes your uncommitted edits with it: said in the stop.
                lost = written(record.main_root, record.checkout, dirty(self.main.git))
                if lost is not None:
                    breach = dataclasses.replace(  # the branch's repair the last command
                        breach, line=f"{breach.line}; {lost.line}",
                        commands=lost.commands + breach.commands)
            for line in said:
                if line:
                    self.main.on_wait(line)
            raise LaneBreach(breach)
        done, now = None, None
        if breach is None and record is not None and record.head:
            # What the user has uncommitted now, one look for this step's check and the next
            # step's record (the landing in between only writes paths nobody had dirty). The
            # look is a `git status` of another working tree than the lane's `add` and
            # `commit`: it runs beside them, not after them, started once the `add` has (a
            # start holds every thread of ours until its child runs: the add goes first).
            looks: list[Callable[[], Listed]] = []

            def look_beside() -> None:
                try:
                    looks.append(dirty_beside(self.main.git))
                except Exception as exc:  # noqa: BLE001 - said once its answer is asked
                    looks.append(partial(_raise, exc))
            try:
                done = commit(look_beside) if commit is not None else None
            except BaseException:
                for look in looks:  # waited for, its answer dropped: the stop goes on up
                    with contextlib.suppress(Exception):
                        look()
                raise
            seen = looks[0]() if looks else Listed(dirty(self.main.git))
            now = self.main.yours(seen.paths)
            self._seen = {p: stamp(self.main.root / p) for p in now}
            self._looked = now
            breach = written(record.main_root, record.checkout, now, seen)
        elif commit is not None:
            done = commit(_nothing)
        if record is not None:
            root, left = record.main_root, set(now or ())
            # Files of yours the look found written back as committed: what its reset did.
            reverted = tuple(p for p in record.checkout if now is not None and p not in left
                             and os.path.lexists(root / p)
                             and stamp(root / p) != record.checkout[p])
            moved = agent_moved_head(record, (self.main.git_dir, self.main.common_dir),
                                     stash_before is not None and
                                     stash.top(self.main.common_dir) != stash_before, reverted)
            said.append(moved.text() if moved is not None else None)
        if breach is not None and breach.kind is Kind.CHECKOUT_WRITTEN:
            # The agent's or yours, time alone cannot tell (you may be editing beside the
            # run): said as found, never kept in a task's record.
            self.main.on_wait(breach.text())
        elif breach is not None:
            said.append(breach.text())
        lines = [line for line in said if line]
        if lines and done is not None:
            note = "; ".join(([done.note] if done.note else []) + lines)
            return dataclasses.replace(done, note=note)
        for line in lines:
            self.main.on_wait(line)
        return done

    def _stashed(self) -> str | None:
        """The entries the agent's `git stash` put in the stash list your checkout shares,
        moved out of it (once: the step's first check takes them); the line that says so."""
        before, self._stash = self._stash, None
        kept = stash.take_out(self.git, self.main.common_dir, self.branch, before)
        if not kept:
            return None
        return (f"the agent ran `git stash` in its lane {self.root}: what it set aside is not "
                f"in this task's change, and its {len(kept)} "
                f"entr{'y' if len(kept) == 1 else 'ies'} left the stash list your checkout "
                f"shares (`git stash list`) for {', '.join(kept)}; `git stash apply {kept[0]}` "
                "brings it back")

    def abandon(self, change: Change) -> str | None:
        """Drop the attempt's edits in the worktree, kept aside first."""
        return self.work.abandon(change)

    def bring_back(self, kept: str) -> bool:
        """Kept edits back in the worktree."""
        return self.work.bring_back(kept)

    def killed_attempt_kept(self, begun_as: str) -> KilledAttempt | None:
        """Where a killed run's attempt is kept (GitVcs.killed_attempt_kept): one in this
        worktree, else one the checkout's prepare rolled back (the killed run worked there)."""
        return self.work.killed_attempt_kept(begun_as) or self.main.killed_attempt_kept(begun_as)

    def diff(self, change: Change) -> str:
        """The task's patch."""
        return self.work.diff(change)

    def close(self) -> None:
        """Leave the worktree (a landing still running beside waited for first)."""
        self._wait_beside()
        self.work.close()

    def finish(self, change: Change, message: str) -> Change:
        """Check the lane, commit in it, then land that commit on the main line."""
        done = self.check(commit=lambda started: self._commit(change, message, started))
        assert done is not None
        return self._landed_fresh(done)

    def _landed_fresh(self, done: Change) -> Change:
        """`_landed(done, fresh=True)`; what the check found the agent did to your checkout
        (`done.note`) is said at once when the landing fails (a conflict, a held landing, a
        refusal), else it would go with the commit it came with: a conflict carries it on
        for the task's record (agentloop.run.lane)."""
        try:
            return self._landed(done, fresh=True)
        except IntegrationConflict as conflict:
            if done.note:
                self.main.on_wait(done.note)
                conflict.note = done.note
            raise
        except BaseException:
            if done.note:
                self.main.on_wait(done.note)
            raise

    def finish_beside(self, change: Change, message: str) -> tuple[Change, bool]:
        """finish, with the landing left running beside what the lane does next where it is a
        fast-forward of the user's checkout that nothing seen stands in the way of: (the lane
        commit, True), its landing settled by settle_beside; else (finish's landed change,
        False). The commit lands as itself, so its sha is the one the branch gets."""
        done = self.check(commit=lambda started: self._commit(change, message, started))
        assert done is not None
        if not self._may_land_beside(done):
            return self._landed_fresh(done), False
        main, parent, sha = self.main, done.base, done.change_id
        before = proc.started()
        self._beside = Beside(done, lambda: main.fast_forward(parent, sha))
        self.work.carry(before)
        # Counted as landed from here on, as the next step's record must say: the branch is
        # at it by the time that step is checked (settle_beside takes it back if not).
        self.landed.append(sha)
        return done, True

    def _commit(self, change: Change, message: str, started: Callable[[], None]) -> Change:
        """The step's commit in the lane, noted as made (made) as soon as it is; `started`
        once its first git command has started (the look at the user's checkout begins)."""
        self._finishing = True
        self._made = self.work.finish(change, message, started)
        self._finishing = False
        return self._made

    def made(self) -> Change | None:
        """The task commit this step made in the lane, if it made one (also when a stop cut
        the commit's finish short after git made it). Until its task's record names it, this
        is the only place that does: the lane's record of the attempt goes as a stopped run
        leaves the lane, and an interrupted task's next run would not look for it; a stop
        that comes before the task is saved hands it over from here (agentloop.run.lane),
        for the next run to land."""
        made = self._made
        if made is None and self._finishing:
            made = self.work.cut_short()
        return made if made is not None and made.change_id and not made.empty else None

    def _may_land_beside(self, done: Change) -> bool:
        """Whether `done` would land by the fast-forward as things stand: the checkout is on
        the branch at the commit's parent (read off the git dir's files), and none of the
        commit's paths is among the user's uncommitted ones the check just saw."""
        if done.empty or not done.change_id or not done.base or self._looked is None \
                or not self.main.may_fast_forward():
            return False
        if refs.where(self.main.git_dir, self.main.common_dir) != (self.main.ref, done.base):
            return False
        return not set(done.files) & set(self._looked)

    def landing_beside(self) -> str | None:
        """The lane commit whose landing runs beside the lane now, if one does."""
        return self._beside.done.change_id if self._beside is not None else None

    def landed_beside(self) -> bool:
        """Whether a landing runs beside the lane and has landed, so settle_beside would
        return at once with its commit (a refusal is for settle_beside's caller to find)."""
        return self._beside is not None and self._beside.landed()

    def settle_beside(self) -> Change | None:
        """The landing that runs beside, waited for: its commit as it landed (as itself);
        None when the checkout refused it (nothing changed: it lands the longer way, by
        land_left), or when none runs."""
        pending = self._beside
        if pending is None:
            return None
        landed = self._waited(pending)  # a Ctrl+C here leaves it to be waited for again
        self._beside = None
        done = pending.done
        if not landed:
            self.landed.remove(done.change_id)
            return None
        if self._sound is not None and self._sound == done.base:
            self._sound = done.change_id  # landed on a main line known whole: still whole
        if self._synced == done.base:
            self._synced = done.change_id  # the lane's HEAD, now the main line's tip
        return done

    def _wait_beside(self) -> None:
        """Nothing lands, follows or leaves while a landing runs beside: it is waited for
        (its result stays for settle_beside)."""
        if self._beside is not None:
            self._waited(self._beside)

    def _waited(self, pending: Beside) -> bool:
        """`pending.wait()`; a landing no agent started begins now, its git in the user's
        checkout, never in this worktree: the lane's next begin holds (quick.NextBegin)."""
        before = proc.started()
        landed = pending.wait()
        self.work.carry(before)
        return landed

    def behind(self) -> bool:
        """Whether the main line moved on since the lane's base (your commit, another lane's
        or another plan's landing), so the next task would start on an old tree. Read off the
        git dir's files, no process: the main line's tip against the commit the lane last
        landed or caught up to. False where the files cannot tell (the landing finds out, as
        ever). A landing left running beside still to start is no move; with anything else
        there it is True, and the caller settles that landing before catch_up."""
        tip = self.main.tip_now()
        if tip is None:
            return False
        pending = self._beside
        if pending is not None:  # its commit was made on the tip it then saw
            return tip not in (pending.done.base, pending.done.change_id)
        if tip == self._synced:
            return False
        if self.work.tree.head() == tip:  # the lane's first task, or one that landed as itself
            self._synced = tip
            return False
        return True

    def catch_up(self) -> bool:
        """The lane's worktree reset to the main line's tip (one `git reset --hard`), its branch
        with it, before the next task begins: every task of the group is landed by now, so
        nothing of the lane's is dropped (what landed is on the main line; the branch's own
        copies stay in the reflog). False, the lane left as it is, while it holds a commit that
        is not on the main line (an attempt a killed run left after its agent committed, which
        its task goes on from): its landing meets the main line as ever, a conflict going to
        the group's session like any landing's. Never while a landing runs beside."""
        if self._beside is not None:
            return False
        tip = self.main.tip()
        head = self.work.tree.head()
        known = {self._synced, *self.landed, *self.lane_commits}
        if head is not None and head != tip and head not in known and \
                not self.work.tree.ancestor(head, tip):
            return False
        if head != tip:
            try:
                self.work.start_over(tip)
            except VcsError:
                return False  # as it was (a lock, say): the landing meets the main line as ever
        self._synced = tip
        return True

    def follow(self) -> None:
        """The next group goes on in this worktree, every task of the last one landed and
        saved: from the main line's tip as it is now (the user may have committed meanwhile).
        No process while the worktree stands there already, as after a task that landed as
        itself; else one `reset --hard` (what the agents left ignored stays, as between tasks)."""
        self._wait_beside()
        self.lane_commits.clear()  # their landed records went as their group ended
        self.landed.clear()        # what this group lands is checked from here on
        tip = self.main.tip()
        if self.work.tree.head() != tip:
            self.work.start_over(tip)
        self._synced = tip

    def main_line(self) -> tuple[Path, str]:
        """Where the finished tasks' commits are to be found: the main line's checkout and
        branch (this worktree's HEAD keeps them as they landed, whatever the user did since)."""
        return self.main.root, self.main.ref

    def recovered(self) -> Change | None:
        """A commit an earlier run made in this lane and may not have landed: landed now."""
        found = self.work.recovered()
        return None if found is None else self._landed(found)

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Finished tasks' commits no longer on the main line."""
        tip = self.main.tip_now()
        pending = self._beside
        if tip is not None and (tip == self._sound or (
                pending is not None and self._sound is not None
                and (self._sound, tip) == (pending.done.base, pending.done.change_id))):
            # The ids are not even read: the caller lists them only if asked. A landing that
            # runs beside, done or not, leaves the main line whole.
            return set()
        ids = list(change_ids)
        if not ids:
            # None finished yet (the first task's landing may still run beside): the main line
            # as it stands is whole, and stays so while it grows by this lane's landings.
            self._sound = tip
            return set()
        try:
            seen = set(self.main.git.out("rev-list", self.main.ref).split())
        except VcsError:
            return set()
        lost = {c for c in ids if c not in seen}
        if lost:
            # As in a checkout (GitVcs.missing): one your squash carried is not lost, its files
            # on the branch as it left them; one a rebase moved whole stays in, to be followed.
            ref = self.main.ref
            moved = rewritten("git", self.main.root, lost, ref)
            lost = {c for c in lost if c in moved or not carried(self.main.git, c, ref)}
        if not lost:
            self._sound = tip
        return lost

    def _landed(self, done: Change, whole: bool = False, fresh: bool = False) -> Change:
        """`done` on the main line; `fresh`: a commit finish just made on `done.base`."""
        if done.empty or not done.change_id:
            return done
        self._wait_beside()  # in the order the tasks finished
        before = proc.started()
        sha = self.main.land(done.change_id, whole, done.base if fresh else None)
        if sha != done.change_id:  # a copy, whose landed record goes once its task is saved
            self.lane_commits.append(done.change_id)
        if sha == done.change_id and self._sound is not None and self._sound == done.base:
            self._sound = sha  # landed on a main line known whole: still whole
        if sha == done.change_id and self._synced is not None and self._synced == done.base:
            self._synced = sha  # landed as itself on the lane's base: the lane holds the tip
        # The landing's git ran in the user's checkout, never in this worktree.
        self.work.carry(before)
        self.landed.append(sha)
        return dataclasses.replace(done, change_id=sha, commit_id=sha)

    # -- conflicts: the lane's worktree is where a person or the group's agent resolves one ------

    def open_conflict(self, conflict: IntegrationConflict) -> list[str]:
        """The worktree as the main line is now, with the lane commit's change applied on top and
        git's conflict markers where it does not fit; the conflicted files."""
        self.git.out("reset", "-q", "--hard", conflict.onto)
        self.git.out("cherry-pick", "--no-commit", conflict.commit, codes=(0, 1))
        out = self.git.out("diff", "--name-only", "-z", "--diff-filter=U")
        return [f for f in out.split("\0") if f] or list(conflict.files)

    def markers_left(self, files: Iterable[str]) -> list[str]:
        """Which of `files` still hold a conflict marker at the start of a line."""
        return markers_left(self.root, files)

    def close_conflict(self, conflict: IntegrationConflict) -> Change:
        """The resolution committed on the main line's commit (the task commit's author, date and
        message), the lane moved to it, and landed; IntegrationConflict if the main line moved
        on meanwhile in a way that conflicts again."""
        self.git.out("add", "-A")
        tree = self.git.out("write-tree").strip()
        new = copy_commit(self.root, conflict.commit, tree, conflict.onto)
        self.git.out("cherry-pick", "--quit", codes=(0, 128))
        self.git.out("reset", "-q", "--hard", new)
        done = Change(change_id=new, commit_id=new,
                      files=tuple(changed_files(self.root, conflict.onto, new)))
        return self._landed(done)

    def drop_conflict(self, conflict: IntegrationConflict) -> None:
        """Unresolved: the worktree back on the lane's own commit, which its branch keeps."""
        self.git.out("cherry-pick", "--quit", codes=(0, 128))
        self.git.out("reset", "-q", "--hard", conflict.commit)

    def head(self) -> str:
        """The lane's commit now (after a person resolved a conflict in it, their commit)."""
        return self.git.out("rev-parse", "HEAD").strip()

    def land_again(self, commit: str) -> Change:
        """A conflicted task's commit (or a person's resolution of it) tried on the main line
        once more; IntegrationConflict when it still does not fit."""
        return self._land_kept(commit, whole=True)

    def land_left(self, commit: str) -> Change:
        """A task's commit whose landing the checkout refused, or a stopped run left
        `landing`: on the main line now (found there if it landed already), its own change
        only, the longer way of finish's landing (waiting on the user's edits, held, or
        IntegrationConflict)."""
        return self._land_kept(commit, whole=False)

    def _land_kept(self, commit: str, whole: bool) -> Change:
        done = self._landed(Change(change_id=commit, commit_id=commit), whole=whole)
        if done.empty or not done.change_id:
            return done
        # What landed, as a task's own landing names it (its commit was made by an earlier run).
        sha = done.change_id
        return dataclasses.replace(done, files=tuple(changed_files(self.main.root, sha + "^",
                                                                   sha)))

    def lane_branch(self) -> str:
        """The branch this lane's worktree is on."""
        return self.git.out("rev-parse", "--abbrev-ref", "HEAD").strip()

    def main_commits_touching(self, commit: str, onto: str, files: list[str]) -> list[str]:
        """The main line's commits since `commit` branched off that changed `files`."""
        base = self.git.out("merge-base", commit, onto).strip()
        return self.git.out("log", "--format=%H", f"{base}..{onto}", "--", *files).split()

    def kept(self, change_id: str) -> str:
        """What a conflicted task lands as on a later run: the lane's commit now (a person's
        resolution of it, made in the worktree, included)."""
        return self.head()

    def help_lines(self, where: str) -> str:
        """How a person looks at a conflicted task's commit and goes on."""
        branch, main = self.lane_branch(), self.main.ref.removeprefix("refs/heads/")
        return (f"its work is on branch {branch} (worktree {where}): `git log -p "
                f"{main}..{branch}` shows it; resolve it there (`cd {where} && git rebase "
                f"{main}`, fix, `git rebase --continue`), then run the same agent-loop "
                "command again to land it and go on")
