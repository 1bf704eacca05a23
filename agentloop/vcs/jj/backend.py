"""jj backend: one jj change per task, on top of the change that was @ when the run started.

jj snapshots the working copy into @ at every command, so the agent's edits land in the task's
change by themselves. But:

* The task file and `.agent-loop/` must never land in a task's change
  (agentloop.vcs.jj.ownfiles): what a tracked one of them holds is moved down by `jj squash
  --from <task> --into <base> <those paths>` into the base, the change that was @ when the run
  began, before a change is sealed or abandoned: the files keep their edits, no task change
  holds them.
* After `finish` the sealed change must stop being @: `finish` ends with `jj new`, and the next
  `begin` describes that fresh change instead of stacking another one on it.
* An agent that moves @ itself (`jj new`, `jj commit`, `jj edit`) has its work gathered back
  into the task's change by finish (agentloop.vcs.jj.moved_off).
* What a killed run left is put right by prepare, before any agent (agentloop.vcs.jj.leftovers).
  A task whose earlier attempt left work in a change goes on in it (agentloop.vcs.jj.resume).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from agentloop.errors import VcsError
from agentloop.vcs import find_root, own_output, plan_files, relative_to
from agentloop.vcs.breach import LaneBreach
from agentloop.vcs.history import missing
from agentloop.vcs.jj import basemark, carried, leftovers, moved_off, ownfiles, resume
from agentloop.vcs.jj.aside import bring_back, keep_aside
from agentloop.vcs.jj.carried import Carried
from agentloop.vcs.jj.lane_check import jj_forgotten, jj_removed
from agentloop.vcs.jj.moved_off import on_top, where
from agentloop.vcs.jj.ownfiles import OwnFiles
from agentloop.vcs.jj.run import Jj, Rev, fileset, op_head
from agentloop.vcs.jj.workspaces import took_in_a_lane
from agentloop.vcs.protocol import Change
from agentloop.vcs.stays_git import attached_note, branch_of, colocated_note


class JjVcs:
    """Tasks as jj changes; every jj call goes through its runner (agentloop.vcs.jj.run)."""
    name = "jj"
    lost_hint = "`jj op log` lists what happened; `jj op restore <op>` undoes what dropped it"

    def __init__(self, root: Path, task_file: Path, initialized: bool = True,
                 auto_track: str | None = None, made: bool = False, lane: bool = False) -> None:
        self.root = root.resolve()
        self.task_file = task_file
        self.initialized = initialized
        # The user's snapshot.auto-track, read once a run (None: not yet): a lane is handed the
        # checkout's, the same repository's and user's config.
        self.auto_track = auto_track
        # A workspace just added on a commit of the main line: no killed run began a change in
        # it, so prepare() has no stray to look for.
        self._made = made
        # A lane's workspace: only agent-loop and its agents work there, so no change in it is
        # the user's (an empty, undescribed @ is one we left: begin takes it, stacks nothing).
        self._lane = lane
        self._own = OwnFiles()   # the task file, other plans' and .agent-loop/: no task's
        self._base = ""          # @ at the first begin: the user's change, takes the tool's edits
        self._began = False      # a task began here in this run (a new lane's first has no base)
        self._fresh = False      # @ is an empty, undescribed change we made: describe, don't stack
        # The message of each change this run's begin made and has not yet finished or
        # abandoned: a change not here is a killed run's (began), even one this run took up.
        self._messages: dict[str, str] = {}
        self._carried: Carried | None = None   # @ as finish's `jj new` left it
        # A killed run's task change whose agent ran `jj commit`/`jj new`: kept by abandon for
        # the task's next begin, which goes on from it (as git does, agentloop.vcs.git.recover).
        self._resumable = ""
        # A lane's operation when the task last began, and that task's change (abandon puts
        # back only its move); the @ _park made on the change its agent moved @ to
        # (agentloop.vcs.jj.moved_off); the change finish or abandon put back as it was there,
        # for the lane's runner (None: none).
        self._begun_at: str | None = None
        self._begun_on = ""
        self._parked = ""
        self.moved_elsewhere: str | None = None
        # Its --config options for every call are set by prepare(). A lane's workspace sits
        # inside your checkout: its commands never look past it (Jj's `confined`).
        self.jj = Jj(self.root, confined=lane, gone=_lane_gone if lane else None)

    def _sweep(self, rev: Rev, below: bool = False) -> bool:
        """Move the tool's own files out of `rev` into the base; True when anything moved.
        `below`: with no base yet (a lane's first task), one is made right below `rev`."""
        ours = [f for f in rev.files if self._own.holds(f)]
        if ours and below and not self._base:
            # A lane's first task began on the main line's tip, with none: that task lands the
            # long way, and the base stays in the lane, off the main line.
            self._base = basemark.make_below(self.jj, self.root, rev.change_id)
        if not ours or not self._base:
            return False
        # --keep-emptied: a task that only touched the task file is sealed or abandoned by us,
        # not silently by squash (which would also drop the change id we handed out).
        self.jj.out("squash", "--from", rev.change_id, "--into", self._base, "--keep-emptied",
                 "--", fileset(ours))
        return True

    # -- the protocol ---------------------------------------------------------------------------

    def prepare(self) -> list[str]:
        """`jj git init` when needed (colocated beside an existing .git); note the base change."""
        notes = []
        if not self.initialized:
            found = find_root(self.root)
            if found is not None and (found / ".git").exists():
                self.root = found
                self.jj.root = found
        # The run's own output file (`> run.log` in the checkout) is written while tasks run.
        self._own = OwnFiles(relative_to(self.task_file, self.root),
                             frozenset(plan_files(self.root) | own_output(self.root)))
        if self.auto_track is None:
            self.auto_track = ownfiles.auto_track(Jj(self.root))
        self.jj.config = self._own.options(self.auto_track)
        if not self.initialized:
            if (self.root / ".git").exists():
                branch = branch_of(self.root / ".git")
                self.jj.out("git", "init", "--colocate")
                notes.append(colocated_note(self.root, branch))
            else:
                self.jj.out("git", "init")
                notes.append(f"initialized a jj repository in {self.root}")
            self.initialized = True
        elif not self._made:
            notes += leftovers.put_right(self.root, self.jj)
            attached = attached_note(self.root)
            notes += [attached] if attached else []
        return notes

    def begin(self, message: str) -> Change:
        """`jj new -m` on @, or describe the fresh @ that finish/abandon left when still unused;
        or go on in the change a killed run's attempt left after its agent committed."""
        if self._resumable:
            kept = self._resume(message)
            if kept is not None:
                self._began = True
                return kept
        reuse = first = False
        last, self._carried = self._carried, None
        if carried.holds(last, self.root):
            # Nothing but our own code ran since finish's `jj commit` made @, and no jj command
            # (the user's `jj commit`, say): @ is that empty change still. Files written in
            # these few milliseconds count as the task's, as edits made while its agent works do.
            reuse = True
        elif self._made and not self._began:
            # A workspace just added on the main line's tip: its @ is empty, undescribed and no
            # one's, so the first task is that change, right on the tip (whose landing then takes
            # the short way). No base below it unless the tool's files go into it (_base_below).
            reuse = True
        elif not self._began and self._lane and self._ours_unused():
            # A lane a stopped or killed run left (or one whose conflict was resolved): its @
            # is the empty change our finish, abandon or squash left there. Stacked on as a
            # base, it stayed beside the main line once the task landed without it.
            reuse = True
        elif not self._began and self._lane:
            left = self._left_as(message)
            if left is not None:
                return left
            first = True
        elif not self._began:
            # The first task: the user's work is snapshotted into @ by `jj new`, and that change
            # (its parent, as it reports) stays theirs. Taken here, not in prepare, so a runner
            # that abandons an earlier run's leftover change first gets the change jj puts in
            # its place.
            first = True
        elif self._fresh:
            # Only the tool's own files may have been written since; anything else (the user
            # editing between tasks) stays in that change, and the task starts on top of it.
            reuse = self._ours_unused()
        told = self.jj.told("describe" if reuse else "new", "-m", message)
        made, self._fresh, self._made, self._began = self._made, False, False, True
        rev = self._wc_of(told)
        if made and reuse and rev.files:
            # Files written into the lane before its first task (lane-copy, lane-link,
            # lane-setup) are no task's: that change becomes the base, the task goes on top.
            self.jj.out("describe", "-m", "")
            told, first = self.jj.told("new", "-m", message), True
            rev = self._wc_of(told)
        if first:
            base = next((r for r in told if not r.is_wc and (r.change_id,) == rev.parents), None)
            self._base = (base or self.jj.revs("@-")[0]).change_id
            basemark.note(self.root, self._base)
        self._messages[rev.change_id] = message
        self._note_begun(rev.change_id)
        return _change(rev)

    def _wc_of(self, told: list[Rev]) -> Rev:
        """@ as the report of the command just run says it is, else as jj says now."""
        return next((r for r in told if r.is_wc), None) or self.jj.revs("@")[0]

    def _note_begun(self, change_id: str) -> None:
        """The task's change `change_id` begins here: the operation park and gather look back
        to (agentloop.vcs.jj.moved_off)."""
        self._begun_at, self._begun_on, self._parked = \
            moved_off.begun_at(self.jj, self._lane), change_id, ""

    def _left_as(self, message: str) -> Change | None:
        """A lane's @ that is this task's own change, an earlier run's attempt (resume.left_as):
        the task goes on in it. Begun on top, that change became the base, the agent's rewrite
        of its files an empty task ("changed no files") and the work stayed beside the main
        line. None when @ is another change."""
        wc = resume.left_as(self.jj, message)
        if wc is None:
            return None
        self._made, self._began, self._fresh = False, True, False
        # Not noted as begun by this run (began): it is still the stopped run's change.
        self._note_begun(wc.change_id)
        return _change(wc, kept=True, note=resume.left_as_note(wc.change_id))

    def _ours_unused(self) -> bool:
        """Whether @ is undescribed and holds none but the tool's own files (which finish sweeps
        into a base): an empty change of ours, which a task may take as it is."""
        wc = self.jj.revs("@")[0]
        return not wc.described and all(self._own.holds(f) for f in wc.files)

    def finish(self, change: Change, message: str) -> Change:
        """`jj commit`: snapshot, describe and leave the task's change in one command, which
        says what the change holds; then sweep out the tool's files or drop it when empty."""
        done = self._finish(change, message)
        self._messages.pop(change.change_id, None)
        return done

    def _finish(self, change: Change, message: str) -> Change:
        self._park(change)
        if self._parked:
            # No `jj commit`: it would seal the parked change, and reverting that (the
            # newest operation) may revert another lane's, made in between.
            self._fresh = True
            return self._commit_elsewhere(change, message)
        try:
            told = self.jj.told("commit", "-m", message)
        except VcsError:
            return self._careful_finish(change, message)  # stale, gone: it says which
        sealed = next((r for r in told if not r.is_wc), None)
        wc = next((r for r in told if r.is_wc), None)
        if sealed is None or wc is None or wc.parents != (sealed.change_id,):
            # A report we cannot read: what the commit left, asked.
            revs = self.jj.revs("@ | @-")
            wc = next((r for r in revs if r.is_wc), None)
            sealed = next((r for r in revs if wc is not None and not r.is_wc and
                           (r.change_id,) == wc.parents), None)
            if sealed is None or wc is None:
                raise VcsError(f"could not read what `jj commit` left in {self.root}; "
                               "`jj log` shows it")
        self._fresh = True
        if sealed.change_id != change.change_id:
            return self._commit_elsewhere(change, message)
        return self._done(sealed, wc=wc)

    def _commit_elsewhere(self, change: Change, message: str) -> Change:
        """`jj commit` sealed a change that is not the task's, or _park found @ off it: the
        agent's work gathered back into the task's change (agentloop.vcs.jj.moved_off)."""
        parked, self._parked = self._parked, ""
        got = moved_off.gather(self.jj, change, message, self._begun_at, parked)
        if got.rewrote is not None:
            self.moved_elsewhere = got.rewrote
        return self._done(got.task, note=got.note)

    def _park(self, change: Change) -> None:
        """Before our first jj command after a lane's agent: a new @ on the change it moved @
        to, if it did, which takes the agent's edits in its place (moved_off.park)."""
        if not self._parked:
            self._parked = moved_off.park(self.jj, change, self._begun_at)

    def _careful_finish(self, change: Change, message: str) -> Change:
        """finish when `jj commit` failed: a look at what @ and the task's change are first."""
        task, wc = where(self.jj, change.change_id)
        if task is None:
            raise VcsError(f"the task's change {change.short} is gone (abandoned by hand?)")
        if wc is not None:
            return self._done(moved_off.fold(self.jj, task, message))
        return self._done(task, describe=message)  # not folded, which gave the message

    def _done(self, task: Rev, wc: Rev | None = None, note: str = "", describe: str = ""
              ) -> Change:
        """The finished task's change with the tool's files swept out of it (and described
        with `describe`, when given): dropped when empty, else the next begin's @ on top of
        it. `wc`: the @ `jj commit` made there, carried to the next begin when the sweep left
        it so; else made by `jj new`."""
        swept = self._sweep(task, below=True)
        if describe:
            self.jj.out("describe", "-r", task.change_id, "-m", describe)
        if swept or describe:
            task = self.jj.revs(task.change_id)[0]
        self._fresh = True
        if task.empty:
            return self._drop_empty(task, note)
        if wc is None:
            self._new_on(task)
        elif not swept and wc.empty and not wc.described:
            self._carried = carried.keep(self.root, wc, task)
        return _change(task, files=self._own.others(task.files), note=note)

    def _drop_empty(self, task: Rev, note: str = "") -> Change:
        """Like git making no commit: an empty change would only clutter the history. Its ids
        go with it, so nothing records a change that no longer exists."""
        self.jj.out("abandon", task.change_id)
        return Change(change_id="", base=",".join(task.parents), empty=True, note=note)

    def _new_on(self, task: Rev) -> None:
        """`jj new` on the finished task; what it says @ is now is kept for the next begin."""
        fresh = next((r for r in self.jj.told("new", task.change_id) if r.is_wc), None)
        if fresh is not None:
            self._carried = carried.keep(self.root, fresh, task)

    def start_over(self, base: str) -> None:
        """The next task begins on `base` (a lane's later group, on the main line's tip): a new
        empty @ there. The @ left behind is the empty one finish made; jj drops it."""
        self._carried = None
        self.jj.out("new", base)
        self._fresh = True

    def carry(self, since: int, op: str | None) -> None:
        """The processes started since `since` were agent-loop's own jj commands in another
        workspace that left this one's @ as it was (a lane's landing): the @ finish left, seen
        at operation `op`, is still the next begin's."""
        self._carried = carried.passed_on(self._carried, self.root, since, op)

    def abandon(self, change: Change, keep: bool = True) -> str | None:
        """Sweep out the tool's files, keep a copy of what the change (and anything on top of it)
        holds in a change off the line, then `jj abandon` them; the line that says so.

        A change that is gone already (abandoned by us before, or by the user by hand after an
        interrupted run) leaves nothing to do: that is no error, or no later run could start.
        An earlier run's change whose agent ran `jj commit` or `jj new` stays (unless not
        `keep`), for its task's next begin to go on from: that agent was at work and had not
        finished, and what it recorded counts (dropping it would pay for the work twice).
        """
        message = self._messages.pop(change.change_id, None)  # None: not begun by this run
        moved = self._put_back(change)
        task, wc = where(self.jj, change.change_id) if change.change_id else (None, None)
        if task is None:
            return None
        if keep and not self._began and wc is not None and on_top(self.jj, task):
            self._resumable = task.change_id
            return None
        # Not begun by this run: a killed run's, whichever task's turn it is (in your checkout
        # one backend serves every group, so others may have begun), taken up or not.
        if message is None and wc is not None and took_in_a_lane(self.jj, task.change_id):
            task = self.jj.revs(task.change_id)[0]
        # With no base (before the first begin, an earlier run's leftover; in a new lane, whose
        # first task began right on the tip) the tool's files are put back on disk instead,
        # where the next snapshot takes them into @.
        saved = {} if self._base else {
            f: (self.root / f).read_bytes() for f in task.files
            if self._own.holds(f) and (self.root / f).is_file()}
        self._sweep(task)
        wc_goes = wc is None or on_top(self.jj, task)
        tip = wc.change_id if wc is not None and wc_goes else task.change_id
        kept = keep_aside(self.jj, self.jj.revs(task.change_id)[0], tip, message)
        self.jj.out("abandon", f"{task.change_id} | ({task.change_id}:: & ::@)")
        for rel, data in saved.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_bytes(data)
        # jj gives an abandoned working-copy commit a new, empty one on its parent.
        self._fresh = wc_goes
        return f"{kept}; {moved}" if kept and moved else kept

    def _put_back(self, change: Change) -> str:
        """Before abandon's first jj command, which snapshots the lane: when the agent of the
        task last begun moved @ off its change (`jj edit @-`, onto a task landed before), its
        edits go back into the task's change, which abandon then keeps aside and drops, and
        the change it moved to is as it was (moved_off.put_back); what to tell the user ("":
        nothing done)."""
        if not change.change_id or change.change_id != self._begun_on:
            return ""
        self._begun_on = ""
        self._park(change)
        parked, self._parked = self._parked, ""
        back = moved_off.put_back(self.jj, change, self._begun_at, parked)
        if back is None:
            return ""
        note, rewrote = back
        if rewrote is not None:
            self.moved_elsewhere = rewrote
        return note

    def given_up(self, change_id: str) -> None:
        """You abandoned the task's change `change_id` while its agent worked (a lane's, which
        holds nothing of yours): @, the new change jj gave the lane, which took the agent's
        later files, is dropped too; the next begin starts on a fresh @."""
        self.jj.out("abandon", "@")
        self._messages.pop(change_id, None)
        self._fresh = True
        self._parked = ""

    def began(self, change_id: str) -> bool:
        """Whether this run's begin made the change (not finished or abandoned since). A
        killed run's is not, even once this run took it up (`_resume`): that run may have
        worked in another workplace, whose working copy may sit on the change (your checkout's
        @ on it, where its agent ran `jj new`; a lane's @, its files on disk there only), which
        dropping it leaves to be seen to (LaneJj.abandon, workspaces.took_in_a_lane)."""
        return change_id in self._messages

    def discard(self, change: Change) -> str | None:
        """Abandon the change for good, never kept for a next begin: --reset's drop of its old
        state's open attempts, which belong to no task of the new state (kept, the reset's
        first begin, whichever task's, went on from another task's work)."""
        return self.abandon(change, keep=False)

    def keeps(self, change_id: str) -> bool:
        """Whether `abandon` kept this change for its task's next begin to go on from: it is
        still in history, so the records go on naming it. Forgotten there, a kill before that
        begin left the change to a run that knew nothing of it: the task began afresh on top,
        found its work done already and was recorded done with no change at all."""
        return bool(change_id) and change_id == self._resumable

    def _resume(self, message: str) -> Change | None:
        """The kept change taken up by this begin (agentloop.vcs.jj.resume), described as the
        task; None (the change abandoned after all) when it is gone or @ no longer sits on
        it."""
        change_id, self._resumable = self._resumable, ""
        task, wc = where(self.jj, change_id)
        if task is None:
            return None
        if wc is None or not on_top(self.jj, task):
            self.abandon(Change(change_id=change_id))
            return None
        self._base = resume.base_below(self.jj, self.root, task)
        self.jj.out("describe", "-r", change_id, "-m", message)
        # Not noted as begun by this run (began): it is still the killed run's change.
        self._note_begun(change_id)
        return _change(self.jj.revs(change_id)[0], kept=True)

    def bring_back(self, kept: str) -> bool:
        """The change a roll-back kept (aside.keep_aside, named by its line) squashed into @."""
        return bring_back(self.jj, kept)

    def diff(self, change: Change) -> str:
        """`jj diff -r <change> --git`; nothing for the empty task, whose change is gone."""
        if not change.change_id:
            return ""
        self._park(change)
        return self.jj.out("diff", "-r", change.change_id, "--git")

    def close(self) -> None:
        """`jj new`, unless @ is already an empty change without a description, or no task's
        change was ever here: where the agent worked in a lane, @ is the user's own change,
        which stays @."""
        if not (self._began or self._fresh or self._resumable):
            return
        wc = self.jj.revs("@")[0]
        if self._fresh and self._sweep(wc):
            wc = self.jj.revs("@")[0]  # the tool's last tick went down into the base
        if wc.empty and wc.described:
            # A begin a stop cut off once its `jj describe`/`jj new` had run: no record names
            # that change. Dropped (jj puts a new empty @ on its parent), not stacked on, where
            # `jj log` would show it for good once the next run moves on. One command that
            # looks and drops: an edit of yours made since the look above is snapshotted into
            # @ first, which is then no longer empty, and stays.
            self.jj.out("abandon", f"@ & ({leftovers.BEGUN})")
            wc = self.jj.revs("@")[0]
        if not (wc.empty and not wc.described):
            self.jj.out("new")
        self._fresh = True
        if self._base:
            basemark.closed(self.jj, self.root, self._base)

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Which task changes are no longer below @ (abandoned, or undone by `jj op restore`).
        Once known whole, it stays so while jj's operation is the one our own last command
        left (agentloop.vcs.jj.run.Jj.sound): the check costs a process only when something
        else ran jj (or moved git's HEAD) since."""
        self.commits: dict[str, str] = {}  # what this call's look found (_check_history)
        now = op_head(self.root)
        if now is not None and now == self.jj.sound:
            return set()
        lost = missing("jj", self.root, change_ids, self.commits)
        if not lost:
            self.jj.sound = now
        return lost

    def recovered(self) -> Change | None:
        """Never: a change is told sealed by its task (`settled`), not found for any task."""
        return None

    def settled(self, change_id: str, trailers: str) -> Change | None:
        """The task's change as finish sealed it, when a killed run did and the state never
        recorded it done: the task's, not an attempt to drop and pay for again (git's recovery
        keeps its commit so too, agentloop.vcs.git.recover). Sealed: described with the message
        finish wrote, which ends in the task's `trailers`, and left by finish's `jj new`, whose
        empty, undescribed @ sits right on it. Anything else is no proof: an agent's own
        `jj new` after finish wrote the message and before it folded what the agent did since
        leaves that work in @ (or in changes between), and its task goes on from there."""
        if not change_id:
            return None
        task, wc = where(self.jj, change_id)
        if task is None or wc is None or task.empty or wc.parents != (change_id,) or \
                wc.described or not all(self._own.holds(f) for f in wc.files):
            return None
        if trailers not in self.jj.description(change_id):
            return None
        return _change(task, files=self._own.others(task.files))


def _change(rev: Rev, files: tuple[str, ...] = (), kept: bool = False, note: str = ""
            ) -> Change:
    """A task's change as `rev` says it is now (Change names its parents as its base)."""
    return Change(change_id=rev.change_id, commit_id=rev.commit_id, base=",".join(rev.parents),
                  files=files, kept=kept, note=note)


def _lane_gone(where: Path) -> Exception:
    """A lane whose jj workspace was removed (its .jj gone, by its agent or from outside), or
    forgotten (`jj workspace forget`): a stop of its group, which says so, never a command run
    in the checkout around it, nor jj's raw error."""
    return LaneBreach(jj_forgotten(where) if (where / ".jj").is_dir() else jj_removed(where))
