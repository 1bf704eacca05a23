"""git in a lane of a parallel run: the group's tasks are committed in its own worktree, as a
sequential run commits them (agentloop.vcs.git.backend, held here), and each one lands on the main
line as it finishes (agentloop.vcs.git.mainline): the task's change as the run records it is the
main line's commit."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Iterable

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.files.shown import typed
from agentloop.vcs.breach import Breach, LaneBreach
from agentloop.vcs.git import aside, landing_beside, lane_check, lane_damage, refs, stash
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.git.landing_copy import changed_files, copy_commit
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.lane_state import LaneState
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.git.run import Git
from agentloop.vcs.landing import IntegrationConflict, markers_left
from agentloop.vcs.lanes import BRANCH_PREFIX
from agentloop.vcs.protocol import Change, KilledAttempt
from agentloop.vcs.rewritten import carried, rewritten

# In a lane's own git dir while a conflict round has moved its branch off the task's commit:
# that commit (LaneGit.open_conflict).
CONFLICT_ROUND = "agent-loop-conflict-round"


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
                           made=made, mainline=lambda: main.ref, yours=main.root)
        self.main = main
        self._made = made
        self.branch = f"refs/heads/{BRANCH_PREFIX}{worktree.name}"
        # What the lane knows between its steps; its check and its landing beside read and
        # write it too (agentloop.vcs.git.lane_check, .landing_beside).
        self.state = LaneState(main.take_before())

    @property
    def lane_commits(self) -> list[str]:
        """What landed as a copy, for the lane's records to be dropped."""
        return self.state.lane_commits

    @property
    def record(self) -> GitLaneRecord | None:
        """What the lane looked like when its step began (agentloop.vcs.git.lane_as_recorded)."""
        return self.state.record

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
        an agent left it off its branch, or a merge or files unmerged in it (before anything in
        it is rolled back or committed, and before any agent is paid to meet it again)."""
        self._conflict_round_undone()
        self.check(GitLaneRecord(self.root, self.branch, None, self.main.root, self.main.ref,
                                 dirs=self._dirs, reopened=not self._made))
        return self.work.prepare()

    def expect_message(self, message: str) -> None:
        """The message the next task will most likely be committed with (GitVcs's)."""
        self.work.expect_message(message)

    def begin(self, message: str) -> Change:
        """Start a task's change in the worktree, and note what the lane looks like."""
        change = self.work.begin(message)
        seen = self.state.begin(stash.top(self.main.common_dir))
        self.state.began(lane_check.step_record(self.state, seen, self.work, self.branch,
                                                self.main))
        return change

    def check(self, record: GitLaneRecord | None = None,
              commit: Callable[[Callable[[], None]], Change] | None = None) -> Change | None:
        """Trust nothing the agent could touch: LaneBreach when it did something outside its
        task that stops the group; what only needs saying is said. `commit`: the step's
        commit in the lane, made (its Change returned) while the user's checkout is looked at,
        once nothing that stops the group was found; it calls the function it is given once
        its first git command has started (that look's git is started then, behind it). What
        is said of a step that made its commit goes as the commit's note (its task's record
        keeps it, for the closing lines and `--status`), else it is said at once."""
        return lane_check.check(self.state, self.main, self.git, self.branch,
                                record or self.state.record, commit, self._unlocked,
                                self._stopped)

    def abandon(self, change: Change) -> str | None:
        """Drop the attempt's edits in the worktree, kept aside first."""
        self._standing(finished=False)
        unlocked = self._unlocked()
        if unlocked:
            self.main.on_wait(unlocked)
        return self.work.abandon(change)

    def _unlocked(self) -> str | None:
        """The locks the agent left in the lane's git dir, removed; the line (lane_damage)."""
        return lane_damage.unlocked(self.root, self._dirs)

    def _standing(self, finished: bool) -> None:
        """LaneBreach when the lane's worktree is gone (lane_damage.standing)."""
        lane_damage.standing(self.root, self.branch, self.main, self.state, self.git, finished,
                             self._dirs)

    def _stopped(self, breach: Breach, finished: bool) -> LaneBreach:
        """The stop for `breach`, a finished agent's work kept aside (lane_damage.stopped)."""
        return lane_damage.stopped(breach, finished, root=self.root, main=self.main,
                                   state=self.state, git=self.git)

    def bring_back(self, kept: str) -> bool:
        """Kept edits back in the worktree."""
        return self.work.bring_back(kept)

    def killed_attempt_kept(self, begun_as: str) -> KilledAttempt | None:
        """Where a killed run's attempt is kept (GitVcs.killed_attempt_kept): one in this
        worktree, else one the checkout's prepare rolled back (the killed run worked there)."""
        return self.work.killed_attempt_kept(begun_as) or self.main.killed_attempt_kept(begun_as)

    def diff(self, change: Change) -> str:
        """The task's patch."""
        self._standing(finished=True)
        return self.work.diff(change)

    def close(self) -> None:
        """Leave the worktree (a landing still running beside waited for first)."""
        landing_beside.wait(self.state, self.work)
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
        if not landing_beside.may_land(self.state, self.main, done):
            return self._landed_fresh(done), False
        # Counted as landed from here on, as the next step's record must say: the branch is
        # at it by the time that step is checked (settle_beside takes it back if not).
        landing_beside.start(self.state, self.main, self.work, done)
        return done, True

    def _commit(self, change: Change, message: str, started: Callable[[], None]) -> Change:
        """The step's commit in the lane, noted as made (made) as soon as it is; `started`
        once its first git command has started (the look at the user's checkout begins)."""
        self.state.committing()
        made = self.work.finish(change, message, started)
        self.state.committed(made)
        return made

    def made(self) -> Change | None:
        """The task commit this step made in the lane, if it made one (also when a stop cut
        the commit's finish short after git made it). Until its task's record names it, this
        is the only place that does: the lane's record of the attempt goes as a stopped run
        leaves the lane, and an interrupted task's next run would not look for it; a stop
        that comes before the task is saved hands it over from here (agentloop.run.lane),
        for the next run to land."""
        made = self.state.made
        if made is None and self.state.finishing:
            made = self.work.cut_short()
        return made if made is not None and made.change_id and not made.empty else None

    def landing_beside(self) -> str | None:
        """The lane commit whose landing runs beside the lane now, if one does."""
        pending = self.state.beside
        return pending.done.change_id if pending is not None else None

    def landed_beside(self) -> bool:
        """Whether a landing runs beside the lane and has landed, so settle_beside would
        return at once with its commit (a refusal is for settle_beside's caller to find)."""
        return self.state.beside is not None and self.state.beside.landed()

    def settle_beside(self) -> Change | None:
        """The landing that runs beside, waited for: its commit as it landed (as itself);
        None when the checkout refused it (nothing changed: it lands the longer way, by
        land_left), or when none runs."""
        return landing_beside.settle(self.state, self.work)

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
        pending = self.state.beside
        if pending is not None:  # its commit was made on the tip it then saw
            return tip not in (pending.done.base, pending.done.change_id)
        if tip == self.state.synced:
            return False
        if self.work.tree.head() == tip:  # the lane's first task, or one that landed as itself
            self.state.synced_to(tip)
            return False
        return True

    def catch_up(self) -> bool:
        """The lane's worktree reset to the main line's tip (one `git reset --hard`), its branch
        with it, before the next task begins: every task of the group is landed by now, so
        nothing of the lane's is dropped (what landed is on the main line; the branch's own
        copies stay in the reflog). False, the lane left as it is, while it holds a commit that
        is not on the main line (an attempt a killed run left after its agent committed, which
        its task goes on from): its landing meets the main line as ever, a conflict going to
        the group's session like any landing's. Never while a landing runs beside. With no
        such attempt, a commit not on the main line is no task's to go on from (a task that
        landed as a copy in a run since stopped, an agent's commit outside its task): the lane
        is caught up all the same, the commits kept first under refs/agent-loop/rolled-back."""
        if self.state.beside is not None:
            return False
        tip = self.main.tip()
        head = self.work.tree.head()
        known = {self.state.synced, *self.state.landed, *self.state.lane_commits}
        if head is not None and head != tip and head not in known and \
                not self.work.tree.ancestor(head, tip):
            if self.work.resuming():
                return False
            try:
                kept = aside.keep_commits(self.git, head, tip, "a lane's own commits, set "
                                          "aside as it caught up with the main line")
            except VcsError:
                return False  # no copy, no reset: the lane stays as it is
            if kept:
                self.main.on_wait(
                    f"lane {self.root.name} held commits that are not on your branch, no "
                    f"task's to go on from: kept under {aside.SAVED_REF} ({head[:12]}) before "
                    f"the lane caught up with {tip[:12]}; `git log -p {tip[:12]}..{head[:12]}` "
                    "shows them")
        if head != tip:
            try:
                self.work.start_over(tip)
            except VcsError:
                return False  # as it was (a lock, say): the landing meets the main line as ever
        self.state.synced_to(tip)
        return True

    def follow(self) -> None:
        """The next group goes on in this worktree, every task of the last one landed and
        saved: from the main line's tip as it is now (the user may have committed meanwhile).
        No process while the worktree stands there already, as after a task that landed as
        itself; else one `reset --hard` (what the agents left ignored stays, as between tasks)."""
        landing_beside.wait(self.state, self.work)
        self.state.group_ended()  # what this group lands is checked from here on
        tip = self.main.tip()
        if self.work.tree.head() != tip:
            self.work.start_over(tip)
        self.state.synced_to(tip)

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
        pending, sound = self.state.beside, self.state.sound
        if tip is not None and (tip == sound or (
                pending is not None and sound is not None
                and (sound, tip) == (pending.done.base, pending.done.change_id))):
            # The ids are not even read: the caller lists them only if asked. A landing that
            # runs beside, done or not, leaves the main line whole.
            return set()
        ids = list(change_ids)
        if not ids:
            # None finished yet (the first task's landing may still run beside): the main line
            # as it stands is whole, and stays so while it grows by this lane's landings.
            self.state.whole_at(tip)
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
            self.state.whole_at(tip)
        return lost

    def _landed(self, done: Change, whole: bool = False, fresh: bool = False) -> Change:
        """`done` on the main line; `fresh`: a commit finish just made on `done.base`."""
        if done.empty or not done.change_id:
            return done
        landing_beside.wait(self.state, self.work)  # in the order the tasks finished
        before = proc.started()
        sha = self.main.land(done.change_id, whole, done.base if fresh else None)
        if sha == done.change_id:  # as itself
            self.state.landed_on(done.base, sha)
        else:   # a copy, whose landed record goes later: kept before anything else can fail
            self.state.copied(done.change_id)
        # The landing's git ran in the user's checkout, never in this worktree.
        self.work.carry(before)
        self.state.landed_commit(sha)
        return dataclasses.replace(done, change_id=sha, commit_id=sha)

    # -- conflicts: the lane's worktree is where a person or the group's agent resolves one ------

    def _round_file(self) -> Path | None:
        """Where a conflict round names the task commit its lane's branch was moved off."""
        return self._dirs[0] / CONFLICT_ROUND if self._dirs is not None else None

    def _conflict_round_undone(self) -> None:
        """A conflict round a kill cut short (open_conflict's file still there): the lane's
        branch back on the task commit it was moved off, the round's unmerged files gone, so
        that the task's commit is found and landed again (not taken for the agent's unmerged
        files, its commit left to the reflog and the task completed with no change)."""
        found = self._round_file()
        try:
            commit = found.read_text(encoding="utf-8").strip() if found is not None else ""
        except (OSError, UnicodeDecodeError):
            return
        if found is None or not commit:
            return
        self.git.out("cherry-pick", "--quit", codes=(0, 128))
        self.git.out("reset", "-q", "--hard", commit)
        found.unlink(missing_ok=True)

    def _round_ended(self) -> None:
        found = self._round_file()
        if found is not None:
            found.unlink(missing_ok=True)

    def open_conflict(self, conflict: IntegrationConflict) -> list[str]:
        """The worktree as the main line is now, with the lane commit's change applied on top and
        git's conflict markers where it does not fit; the conflicted files. The task commit the
        branch leaves is named in the lane's git dir until the round ends (close_conflict,
        drop_conflict): a kill before then is undone by the next run's prepare."""
        found = self._round_file()
        if found is not None:
            found.write_text(conflict.commit + "\n", encoding="utf-8")
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
        self._round_ended()
        done = Change(change_id=new, commit_id=new,
                      files=tuple(changed_files(self.root, conflict.onto, new)))
        return self._landed(done)

    def drop_conflict(self, conflict: IntegrationConflict) -> None:
        """Unresolved: the worktree back on the lane's own commit, which its branch keeps."""
        self.git.out("cherry-pick", "--quit", codes=(0, 128))
        self.git.out("reset", "-q", "--hard", conflict.commit)
        self._round_ended()

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
        # The cd names the lane's folder in full: a person pastes it from wherever they are.
        return (f"its work is on branch {branch} (worktree {where}): `git log -p "
                f"{typed(main)}..{typed(branch)}` shows it; resolve it there (`cd "
                f"{typed(self.root)} && git rebase {typed(main)}`, fix, `git rebase --continue`), "
                "then run the same agent-loop command again to land it and go on")
