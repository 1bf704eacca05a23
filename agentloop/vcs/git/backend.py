"""git backend: one commit per task, holding exactly the paths the task changed.

The working tree is the truth. `begin` records HEAD, the index (as a tree) and the state of every
path that already differed from HEAD: the user's dirty and untracked files, stored as blobs so
`abandon` can put them back byte for byte. A path belongs to the task when its state differs from
that record. The commit is git's own `commit --only` of exactly those paths (or, where git
declines, one built in a temporary index), so nothing the user staged is swept in and no hooks
run; the task file and `.agent-loop/` are never candidates. How a finish commits is the two ways'
own (agentloop.vcs.git.quick, agentloop.vcs.git.careful); this module is the protocol, the open
attempt's life (prepare, begin, finish, abandon, resume, close) and what it keeps between tasks.
An attempt whose run died is dealt with by the next run through the open-attempt record
(agentloop.vcs.git.record and .recover).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from agentloop.errors import VcsError
from agentloop.vcs import own_output, plan_files, relative_to, submodule_gitdirs
from agentloop.vcs.git import aside, dirty_tree, planted, quick, refs
from agentloop.vcs.git.dirty_tree import beside_lanes, dirty_message, why_here
from agentloop.vcs.git.files import state_of
from agentloop.vcs.git.quick import index_seen
from agentloop.vcs.git.record import AttemptRecord, Start
from agentloop.vcs.git.repo import GitRepo, split
from agentloop.vcs.git.run import EMPTY_TREE, Git
from agentloop.vcs.history import missing
from agentloop.vcs.protocol import Change, KilledAttempt, NotKept
from agentloop.vcs.rewritten import carried, rewritten

if TYPE_CHECKING:
    import git  # opened by GitRepo when first needed


class GitVcs:
    """Tasks as commits on the current branch, through GitPython and the git it drives: the one
    git runner, the repository view built on it, and the open-attempt record, held here."""

    name = "git"
    lost_hint = ("`git reflog` shows where the branch was; `git reset --hard <that sha>` (or "
                 "`git cherry-pick <sha>`) brings the commit back")

    def __init__(self, root: Path, task_file: Path, allow_dirty: bool = False,
                 note: str = "", lane: bool = False,
                 place: tuple[Path, Path] | None = None, made: bool = False,
                 lanes: bool = False, mainline: Callable[[], str] | None = None,
                 yours: Path | None = None) -> None:
        self._repository(root, place, made)
        # The run's terms for this checkout, as its maker gave them: never changed here.
        self.task_file = task_file
        self.allow_dirty = allow_dirty
        # The user's checkout of a run whose agents work in lanes where one can be: their
        # uncommitted files here are no task's (a landing that would touch one waits), so
        # prepare() leaves them alone instead of refusing them.
        self.lanes = lanes
        self.note = note  # why git was chosen, when `auto` fell back to it
        # A lane's worktree: only agents work there, so commits on its branch since an
        # attempt began are that attempt's (agentloop.vcs.git.recover).
        self.lane = lane
        # A lane's main line (your branch, refs/heads/...), read when asked: the run follows
        # a rename of it. Its commits that the agent brought into the lane (`git merge main`,
        # `git pull --rebase`) are landed already, never its task's change
        # (agentloop.vcs.git.careful).
        self.mainline = mainline
        # Where a person brings back the files a roll-back kept: a lane's folder goes when the
        # run is done, so a lane names your checkout.
        self._yours = yours
        self._no_attempt_open()
        self._no_killed_run_found()
        self._nothing_seen_yet()
        self._no_nested_repository_known()

    def _repository(self, root: Path, place: tuple[Path, Path] | None, made: bool) -> None:
        """The one git runner and the repository view on it, at `root`, and what the maker of
        this backend knew of that checkout already, so that prepare need not find it out."""
        self.git = Git(root.resolve())
        self.tree = GitRepo(self.git)
        # A lane's (git dir, common dir), read from its files: no `rev-parse` to find them.
        self._place = place
        # A worktree agent-loop has just checked out from a commit: nothing has written in it
        # yet, so prepare() has no uncommitted file to look for.
        self._made = made

    def _no_attempt_open(self) -> None:
        """The open attempt, none yet: its record on disk (made by _open), the start a begin
        records, what it planted, and the message its commit most likely gets."""
        self._record: AttemptRecord | None = None
        self._start: Start | None = None
        # Your repository's config and hooks as the task began, in your checkout (a lane's
        # check looks at them itself: agentloop.vcs.git.lane).
        self._settings: planted.Settings | None = None
        # The message the next begin's task will most likely be committed with (expect_message):
        # the record begin writes names it, so finish need not write the record again.
        self._expected: str | None = None
        # An attempt whose files no copy could be kept of (abandon): its record stays on disk
        # past close, so that the next run's prepare rolls it back as a killed run's, keeping
        # the copy then or stopping before any agent, never taking its files for yours.
        self._left_unkept = False

    def _no_killed_run_found(self) -> None:
        """What prepare finds an earlier run left when it was killed inside a task: none yet."""
        # The commit it made for its last task and may not have recorded (recovered() hands it).
        self._recovered: Change | None = None
        # An attempt a killed run left after its agent committed: its task goes on from it.
        self._resumable: Start | None = None
        # The line naming where prepare kept a killed run's attempt it rolled back
        # (aside.bring_back reads it): the attempt's work, should its agent have finished;
        # and the message its begin was given, which names its task.
        self._rolled_back: tuple[str, str | None] | None = None

    def _nothing_seen_yet(self) -> None:
        """What this backend has seen of the checkout, so that a later step need not ask git
        again: nothing yet."""
        # (branch, HEAD) at which every finished task's commit was last seen in the history.
        self._sound: tuple[str | None, str | None] | None = None
        # What the next begin would find, known at the end of finish; trusted while no
        # process has been started since, for a moment (agentloop.vcs.git.quick.NextBegin).
        self._next = quick.NextBegin()
        # Who the index file was when it last held HEAD's tree and nothing else was dirty
        # (agentloop.vcs.git.quick): unchanged at finish, `git add -A` finds only the task's.
        self._index_seen: tuple[int, ...] | None = None
        # What prepare's `git status` listed uncommitted (every path, the task file's too): the
        # main line of a run in lanes knows the user's uncommitted paths without asking again.
        self.found_listed: list[str] | None = None

    def _no_nested_repository_known(self) -> None:
        """Whose the repositories inside this one are (a nested repository is never deleted,
        nor taken for an agent's work when it is yours): none known yet."""
        # Those that were there before an agent ran (yours, seen by prepare's or a begin's
        # `git status`): never taken for an agent's (careful.with_nested).
        self._yours_nested: set[str] = set()
        # Those a rolled-back attempt's agent made, with the message its task began with: its
        # retry's `git status` lists them, and they are still its agent's, not yours. Another
        # task's begin takes them for yours, as ever.
        self._agents_nested: tuple[str | None, frozenset[str]] = (None, frozenset())

    @property
    def root(self) -> Path:
        """The working tree (the repository's top, once prepared)."""
        return self.git.root

    @property
    def index_at_begin(self) -> tuple[int, ...] | None:
        """Who the index file was at begin, when it held HEAD's tree and nothing else was
        dirty (quick.index_seen); None when it did not, or is not watched."""
        return self._index_seen

    @property
    def repo(self) -> git.Repo:
        """GitPython's repository, once prepared."""
        return self.tree.repo

    def _open(self) -> bool:
        if self._place is not None and self.root.is_dir():
            self.tree.place(*self._place)
        elif not self.tree.locate():
            return False
        self._record = AttemptRecord(self.tree.git_dir)
        self.tree.task_rel = relative_to(self.task_file, self.root)
        # The run's own output file in the checkout (`> run.log`) is kept out as a plan is.
        self.tree.plans = plan_files(self.root) | own_output(self.root)
        return True

    def prepare(self) -> list[str]:
        """Open (or `git init`) the repository; refuse a dirty tree unless allowed. A checkout
        whose own commit is gone fails its first look at git's words ("bad object HEAD"): it
        is said as the damaged repository it is instead (agentloop.vcs.git.pruned)."""
        try:
            return self._prepare()
        except Exception:
            said = self._damaged()
            if said is None:
                raise
            raise said from None

    def _damaged(self) -> VcsError | None:
        """The damaged repository's line, when the commit your checkout stands on is missing
        (a lane's own is its run's to mend: agentloop.vcs.git.lane_damage)."""
        if self.lane:
            return None
        from agentloop.vcs.git import pruned  # only once prepare failed

        try:
            return pruned.checkout_damaged(self.git, *self.tree.where())
        except Exception:  # noqa: BLE001 - what prepare raised is said instead
            return None

    def _prepare(self) -> list[str]:
        notes: list[str] = [self.note] if self.note else []
        created = False
        if not self._open():
            self.git.out("init", "-q")
            self._open()
            created = True
            notes.append(f"initialized a git repository in {self.root}")
        assert self._record is not None  # made by _open
        # No record, no earlier run that died inside a task: the modules that recover one are
        # not loaded before the run's first agent starts.
        undone = self._record.path.exists() and self._recover(notes)
        head = self.tree.head()
        fresh = self._made and not undone and self._resumable is None
        self.tree.listed = None
        dirty = [] if fresh else dirty_tree.dirty(self.tree, head)
        self._yours_nested |= self.tree.nested_seen
        if not self.lane:
            submodule_gitdirs.yours(self.root, self.tree.nested_seen)
        # The checkout as the run found it, for the main line of a run in lanes.
        self.found_listed = None if created else self.tree.listed
        if fresh and head is not None:
            # A working copy made a moment ago holds its commit and nothing else.
            self._clean_at(head)
        if self._resumable is not None:  # the attempt's files are its task's, not the user's
            dirty = sorted(set(dirty) - self.tree.changed(self._resumable))
        try:
            notes += dirty_tree.settle(self.tree, dirty, head, created, self.lanes,
                                       self.allow_dirty)
        except VcsError as exc:
            if self._rolled_back is not None:  # the refusal alone never said where they went
                exc.said_first = (aside.way_back(self._rolled_back[0], self._yours or self.root),)
            raise
        return notes

    def _recover(self, notes: list[str]) -> bool:
        """An earlier run died inside a task: keep the commit it made, else undo its edits
        (True), its notes added to `notes`."""
        from agentloop.vcs.git import recover  # only after a run that died inside a task

        assert self._record is not None  # made by _open
        found = recover.examine(self.tree, self._record, lane=self.lane,
                                keep_or_stop=not self.allow_dirty)
        self._recovered, self._resumable = found.recovered, found.resume
        if found.undo is not None:  # examine kept its copy
            recover.roll_back(self.tree, found.undo)
            self._forget()
            line = aside.copy_named(found.notes)
            self._rolled_back = (line, found.undo.begun_as) if line is not None else None
        notes += found.notes
        return found.undo is not None

    def uncommitted(self) -> str | None:
        """prepare()'s refusal of a dirty tree, found without changing anything (for
        --dry-run): its message, or None when the run would not refuse."""
        from agentloop.vcs.git import recover  # --dry-run only

        try:
            if not self._open():
                return None  # the run makes the repository; nothing of the user's is in the way
        except VcsError:
            return None  # no folder, or no working tree: the run says so
        head = self.tree.head()
        if self.allow_dirty or beside_lanes(self.tree, head, self.lanes):
            return None
        dirty = dirty_tree.dirty(self.tree, head)
        assert self._record is not None  # made by _open
        leftover = recover.resumable(self.tree, self._record)
        if leftover is None:  # an attempt the run keeps a copy of and rolls back, or stops on
            leftover = recover.rolled_back(self.tree, self._record)
            try:
                if leftover is not None:
                    recover.keepable(self.tree, leftover)
            except VcsError as exc:
                return str(recover.unkept(self.root, exc))
        if leftover is not None:  # the attempt's files: gone on from or rolled back
            dirty = sorted(set(dirty) - self.tree.changed(leftover))
        return dirty_message(self.root, dirty, why_here(head, self.lanes)) if dirty else None

    def begin(self, message: str) -> Change:
        """Record HEAD, the index and the state of every already-dirty path; or go on from
        the attempt of this task that a killed run left after its agent committed."""
        expected, self._expected = self._expected or message, None
        self._left_unkept = False  # its record is this begin's to replace
        if not self.lane:
            self._settings = planted.look(self.tree.dirs()[1])
        if self._resumable is not None:
            resumed = self._resume(message)
            if resumed is not None:
                return resumed
        start = self._next.take(self.tree)
        if start is not None:
            self._remember(dataclasses.replace(start, message=expected, begun_as=message,
                                               kept_out=sorted(self.tree.plans)),
                           fresh=True)
            return Change(change_id="", base=start.head or "")
        head = self.tree.head()
        status = self.tree.status()
        retried, self._agents_nested = self._agents_nested, (None, frozenset())
        self._yours_nested |= status.nested - (retried[1] if retried[0] == message else set())
        if not status.staged:
            index_tree = self.tree.tree(head)
        else:
            try:
                index_tree = self.git.out("write-tree").strip()
            except VcsError:
                index_tree = head or EMPTY_TREE  # unmerged entries: the best we can put back
        states = {p: state_of(self.root, p, self.repo.odb)
                  for p in self.tree.candidates(head, status)}
        self._index_seen = None if status.staged or states else index_seen(self.tree.git_dir)
        self._remember(Start(head, self.tree.ref(), index_tree, states, self.tree.task_rel,
                             expected, begun_as=message, kept_out=sorted(self.tree.plans)),
                       fresh=True)
        return Change(change_id="", base=head or "")

    def expect_message(self, message: str) -> None:
        """The message the next begin's task will most likely be committed with (the plain
        one, trailers and all): begin's record names it, so finish, committing with it, writes
        no record before the commit. Replacing the record there costs ext4 a flush to disk a
        task (a rename over a file); any other message is written there as ever."""
        self._expected = message

    def finish(self, change: Change, message: str,
               meanwhile: Callable[[], None] | None = None) -> Change:
        """Commit the task's paths; fold any commits the agent made itself into that one commit.

        Folding keeps one commit per task, so one `git revert` undoes the task, and it applies the
        same filters to the agent's commits (a `git commit -a` would have taken the task file).
        `meanwhile` (a process to run beside, a lane's look at your checkout) is called once,
        as soon as the first git command of the commit has started.
        """
        done = self._finish(change, message, meanwhile)
        settings, self._settings = self._settings, None
        found = settings and planted.changed(self.tree.dirs()[1], self.root, settings,
                                             "the agent")
        if not found:
            return done
        return dataclasses.replace(done, note="; ".join(filter(None, (done.note, found.text()))))

    def _finish(self, change: Change, message: str,
                meanwhile: Callable[[], None] | None) -> Change:
        """The task's commit the short way where it takes the very paths the careful way would
        (agentloop.vcs.git.quick), else the careful way (agentloop.vcs.git.careful); what each
        knows of the next begin and of the history kept here for the next task."""
        start = self._started()
        pending = [meanwhile] if meanwhile is not None else []

        def started() -> None:
            while pending:
                pending.pop()()
        quickly = self._quick_finish(start, message, started if pending else None)
        if quickly is not None:
            return quickly
        started()  # the short way declined before its `add` (or after): the careful way now
        from agentloop.vcs.git import careful  # only when the short way declined

        done = careful.finish(self.tree, start, message, lane=self.lane, mainline=self.mainline,
                              yours_nested=self._yours_nested, remember=self._remember,
                              forget=self._forget, next_begin=self._next)
        if done.watch_index:
            self._index_seen = index_seen(self.tree.git_dir)
        if done.sha is None:
            change = Change(change_id="", base=done.start.head or "", empty=True)
        else:
            change = self._committed(done.start, done.sha, done.files)
        return dataclasses.replace(change, note=done.note) if done.note else change

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Which of these task commits are no longer in the current branch's history. Once
        known whole, the history stays so while HEAD is where this run last put it: the check
        costs a process only when something else moved the branch."""
        now = self.tree.where()
        if now == self._sound:
            return set()
        lost = missing("git", self.root, change_ids)
        if lost:
            # One your squash (or an amend that dropped its trailers) carried is not lost: its
            # files are on the branch as it left them. One a rebase or amend moved whole stays
            # in, for the run to follow by its trailers.
            moved = rewritten("git", self.root, lost)
            lost = {c for c in lost if c in moved or not carried(self.git, c, "HEAD")}
        if not lost:
            self._sound = now
        return lost

    def carry(self, since: int) -> None:
        """The processes started since `since` ran elsewhere (quick.NextBegin.carry)."""
        self._next.carry(since)

    def start_over(self, commit: str) -> None:
        """The next task begins on `commit` (a lane's later group, on the main line's tip):
        every earlier attempt here ended and was saved, so its record goes first (a kill in
        between leaves no record naming a commit HEAD no longer descends from the way it did),
        then the worktree is reset to it."""
        self._forget()
        self._next = quick.NextBegin()
        self.git.out("reset", "-q", "--hard", commit)
        # As a worktree just made (prepare): the commit, its tree in the index.
        head = self.tree.head()
        if head is not None:
            self._clean_at(head)

    def _clean_at(self, head: str) -> None:
        """The checkout holds commit `head` and nothing else (its tree in the index, nothing
        tracked dirty): its next begin is known without a `git status`, as after a clean
        commit (if no process ran in between, agentloop.vcs.git.quick.NextBegin)."""
        self._next.expect(Start(head, self.tree.ref(), self.tree.tree(head), {},
                                self.tree.task_rel))
        self._index_seen = index_seen(self.tree.git_dir)

    def cut_short(self) -> Change | None:
        """The task commit a finish that a stop (or an error) cut short had made already,
        HEAD moved to it, as finish returns it; None when it made none."""
        from agentloop.vcs.git import recover  # only after a stop

        start = self._start
        head = self.tree.head()
        if start is None or head is None or head == start.head or \
                (head != start.commit and not recover.ours(self.tree, start, head)):
            return None
        files = start.files or sorted(split(self.git.out(  # committed the short way: no list
            "diff-tree", "-r", "--root", "--name-only", "-z", "--no-renames", "--no-commit-id",
            head)))
        return Change(change_id=head, commit_id=head, base=start.head or "", files=tuple(files))

    def recovered(self) -> Change | None:
        """The commit an earlier run made for its last task and may not have recorded (once)."""
        found, self._recovered = self._recovered, None
        return found

    def killed_attempt_kept(self, begun_as: str) -> KilledAttempt | None:
        """Where prepare kept the attempt a killed run left and it rolled back (once), when
        that attempt was begun as `begun_as` (a record too old to say so: any); None when
        there was none, or no copy. Asked from a lane too, of the checkout's backend
        (GitMainLine), for a task a killed run began in the checkout."""
        found = self._rolled_back
        if found is None or found[1] not in (None, begun_as):
            if self.lane or self.lanes:
                return None
            line = self._left_in_a_lane(begun_as)
            return KilledAttempt(line) if line is not None else None
        self._rolled_back = None
        # Its prepare said it: the checkout's among the run's first lines, a lane's as that
        # lane's line (agentloop.run.scheduler).
        return KilledAttempt(found[0], said=True)

    def _left_in_a_lane(self, begun_as: str) -> str | None:
        """Your checkout, after a killed run in lanes: the attempt begun as `begun_as` that it
        left open in a lane of this plan, rolled back there as that lane's own prepare would
        have (its files kept under aside.SAVED_REF, the lane left as it began, for the sweep
        of a later run in lanes); the line naming the copy, or None when no lane holds it."""
        from agentloop.vcs.lanes import lanes_dir, linked_checkout, plan_key

        folder = lanes_dir(self.root)
        prefix = plan_key(self.tree.task_rel or self.task_file.name,
                          linked_checkout(self.root)) + "-"
        common = self.tree.dirs()[1]
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            own = refs.worktree_git_dir(path) if path.name.startswith(prefix) and \
                refs.healthy_worktree(path) else None
            try:
                start = AttemptRecord(own).read() if own is not None else None
            except ValueError:
                continue  # the lane's own prepare says so, should a run in lanes take it up
            if own is None or start is None or start.commit is not None or \
                    start.begun_as != begun_as:
                continue
            return GitVcs(path, self.task_file, lane=True, place=(own, common)).roll_back_killed()
        return None

    def roll_back_killed(self) -> str | None:
        """The attempt a killed run left open here, rolled back as this checkout's own prepare
        would (its files kept under aside.SAVED_REF), never gone on from, and the repository
        closed: the line naming the copy, or None when nothing was rolled back. For a lane no
        run prepared (_left_in_a_lane)."""
        from agentloop.vcs.git import recover  # only after a killed run

        try:
            self._open()
            assert self._record is not None  # made by _open
            found = recover.examine(self.tree, self._record, lane=self.lane, resume=False)
            if found.undo is None:
                return None
            recover.roll_back(self.tree, found.undo)
            self._forget()
        finally:
            self.tree.close()
        return aside.copy_named(found.notes)

    def abandon(self, change: Change) -> str | None:
        """Put every path the attempt changed back as it was at begin, commits included, after
        keeping them in a commit under aside.SAVED_REF; the line that says so, if anything was.

        Without an open attempt (abandoned already, or never begun) there is nothing to do.
        """
        from agentloop.vcs.git import recover  # only after a stop

        start = self._start
        if start is None:
            return None
        if recover.missing_objects(self.tree, start):
            self._forget()  # nothing left to put the files back from: they stay as they are
            return None
        # The user edits the same tree while the agent works: what is undone may be theirs.
        try:
            kept = aside.keep(self.tree, start, "an attempt's files, rolled back when it stopped")
        except VcsError as exc:
            self._start, self._left_unkept = None, True  # its record stays: see close
            return NotKept(f"keeping a copy of the stopped attempt's files failed ({exc}): "
                           f"they are left as they are in {self.root}, not rolled back and not "
                           "kept yet: the next run keeps them before any agent runs, or "
                           "stops on the same fault")
        try:
            recover.roll_back(self.tree, start)
        except VcsError as exc:
            from agentloop.vcs.git import behind

            # Your git holds the index (past the door's wait): the files went back, the index
            # cannot follow. The copy is whole: said as kept, a re-run brings it back.
            if kept is None or not behind.locked(self.tree.git_dir, str(exc)):
                raise
        self._forget()
        self._agents_nested = (start.begun_as,
                               frozenset(self.tree.status().nested - self._yours_nested))
        return aside.said(kept, self._yours or self.root) if kept is not None else None

    def bring_back(self, kept: str) -> bool:
        """The files a roll-back kept (aside.keep, named by its line) back in the tree."""
        return aside.bring_back(self.tree, kept)

    def diff(self, change: Change) -> str:
        """The task commit's patch; before finish, what the task would commit now."""
        if change.change_id:
            return self.git.out("show", "--format=", "--patch", "--no-color", "--no-ext-diff",
                             change.change_id)
        start = self._started()
        # The one `git status` changed() would ask, with the files of the repositories the
        # agent made inside this one (--require-changes counts them: finish commits them).
        from agentloop.vcs.git.careful import with_nested  # before finish: what it commits

        status = with_nested(self.tree, self.tree.status(), self._yours_nested)[0] \
            if start.head == self.tree.head() else None
        tree = self.tree.build_tree(start.head, self.tree.changed(start, status))
        return self.git.out("diff-tree", "--patch", "--no-color", start.head or EMPTY_TREE, tree)

    def resuming(self) -> bool:
        """Whether a killed run's attempt, its agent's commits on top, waits for its task to
        begin again and go on from them (examine found it so)."""
        return self._resumable is not None

    def close(self) -> None:
        """Nothing to leave: the next edits are uncommitted, in no task's commit. The record of
        an attempt that is still open (the run stopped on an error inside it, or a killed run's
        attempt no task has taken up) stays: the next run needs it."""
        if self._start is None and self._resumable is None and self._record is not None \
                and not self._left_unkept:
            self._forget()
        self.tree.close()

    # -- the open attempt -------------------------------------------------------------------------

    def _resume(self, message: str) -> Change | None:
        """Go on from the killed run's attempt when this begin is its task's, the agent's
        commits still on top of where it began; else roll it back as any unfinished attempt
        (its files kept under aside.SAVED_REF) and say None: a new attempt begins."""
        from agentloop.vcs.git import recover  # only after a killed run

        resumed, self._resumable = self._resumable, None
        assert resumed is not None and self._record is not None
        if (resumed.begun_as or resumed.message) == message and \
                recover.continues(self.tree, resumed):
            self._index_seen = None
            self._remember(resumed)  # as examine read it (a commit never landed forgotten)
            return Change(change_id="", base=resumed.head or "", kept=True)
        found = recover.examine(self.tree, self._record, lane=self.lane, resume=False)
        if found.undo is not None:  # examine kept its copy
            recover.roll_back(self.tree, found.undo)
            self._forget()
        return None

    def _remember(self, start: Start, fresh: bool = False) -> None:
        self._start = start
        assert self._record is not None
        self._record.write(start, fresh)

    def _forget(self) -> None:
        self._start = None
        if self._record is not None:
            self._record.forget()

    def _started(self) -> Start:
        if self._start is None:
            raise VcsError("no task change is open: begin() was not called")
        return self._start

    def _quick_finish(self, start: Start, message: str,
                      meanwhile: Callable[[], None] | None = None) -> Change | None:
        """Commit the task the short way (agentloop.vcs.git.quick); None when it may not be
        taken (nothing done then)."""
        seen, self._index_seen = self._index_seen, None
        if start.states or seen is None or seen != index_seen(self.tree.git_dir) or \
                self.tree.where() != (start.ref, start.head) or quick.sparse(self.tree.git_dir):
            return None
        paths = quick.stage_all(self.tree, start, meanwhile)
        if paths is None:
            return None
        if not paths:
            self._forget()
            return Change(change_id="", base=start.head or "", empty=True)
        # Recorded before HEAD moves (begin did, unless the message changed since): a run
        # killed in between finds the commit by its message.
        if message != start.message:
            start = dataclasses.replace(start, message=message)
            self._remember(start)
        if not quick.commit_index(self.tree, message):
            return None
        sha = self.tree.head()
        assert sha is not None
        if self._next.foresee(self.tree, start, sha, frozenset()):  # the index: the commit's tree
            self._index_seen = index_seen(self.tree.git_dir)
        return self._committed(start, sha, paths)

    def _committed(self, start: Start, sha: str, files: Iterable[str]) -> Change:
        """The end of a finish that made commit `sha` of `files` for `start`, either way."""
        if self._sound == (start.ref, start.head):
            self._sound = (start.ref, sha)  # built on a history known whole: still whole
        # The record stays on disk until the next begin or close: a run killed before the
        # runner saved the task as done finds it there, and recovered() hands the commit over.
        self._start = None
        return Change(change_id=sha, commit_id=sha, base=start.head or "",
                      files=tuple(sorted(files)))
