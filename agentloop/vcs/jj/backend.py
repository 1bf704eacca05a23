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
* What a killed run left is put right by prepare, before any agent (agentloop.vcs.jj.leftovers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from agentloop.errors import VcsError
from agentloop.vcs import find_root, own_output, plan_files, relative_to
from agentloop.vcs.check import LaneBreach, jj_removed, operation
from agentloop.vcs.history import missing
from agentloop.vcs.jj import basemark, carried, leftovers, ownfiles
from agentloop.vcs.jj.aside import bring_back, keep_aside
from agentloop.vcs.jj.carried import Carried
from agentloop.vcs.jj.ownfiles import OwnFiles
from agentloop.vcs.jj.run import Jj, Rev, fileset, op_head
from agentloop.vcs.jj.workspaces import lane_folder
from agentloop.vcs.protocol import Change
from agentloop.vcs.stays_git import branch_of


def colocated_note(root: Path, branch: str | None) -> str:
    """What `jj git init --colocate` did to a git user's repository, in one line: git keeps
    working, but jj keeps git's HEAD detached and moves no branch, so the user's branch stays
    behind the tasks until they move it."""
    if branch is None:
        return f"initialized a colocated jj repository in {root} (git keeps working)"
    return (f"initialized a colocated jj repository in {root}: git keeps working, on a "
            f"detached HEAD from now on (jj's way), and your branch {branch} stays where it is; "
            f"`jj bookmark set {branch} -r @-` after the run brings it to the tasks")


def attached_note(root: Path) -> str | None:
    """A colocated repository whose git is still on a branch (made colocated by the user, who
    works on with git): jj's first new change leaves git's HEAD detached and the branch behind,
    said once, before that happens; None once git is detached (jj's way, nothing new)."""
    git_dir = root / ".git"
    branch = branch_of(git_dir) if git_dir.is_dir() else None
    if branch is None or not _born(git_dir, branch):
        return None  # `jj git init` names an unborn main: a jj user's, with no branch to leave
    return (f"this colocated repository runs with jj: git is on branch {branch} now, and on a "
            f"detached HEAD once the run begins (jj's way), your branch {branch} stays where it "
            f"is; `jj bookmark set {branch} -r @-` after the run brings it to the tasks "
            "(`--vcs git` keeps git on it instead)")


def _born(git_dir: Path, branch: str) -> bool:
    """Whether git has the branch (a loose or a packed ref), read without a process."""
    if (git_dir / "refs" / "heads" / branch).is_file():
        return True
    try:
        packed = (git_dir / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.endswith(f" refs/heads/{branch}") for line in packed.splitlines())


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
        # The operation jj was at when the task last began (_moved_back), and the change the
        # agent moved @ to, which finish put back as it was (None: none).
        self._begun_at: str | None = None
        self.moved_elsewhere: str | None = None
        self._moved_note = ""
        self._parked = ""   # the @ _park made, on the change the agent moved to
        # Its --config options for every call are set by prepare(). A lane's workspace sits
        # inside your checkout: its commands never look past it (Jj's `confined`).
        self.jj = Jj(self.root, confined=lane, gone=_lane_gone if lane else None)

    def _base_below(self, task: Rev) -> None:
        """A base for the tool's files, made as a new empty change right below the task's
        (a lane's first task began on the main line's tip, with none): that task lands the
        long way, and the base stays in the lane, off the main line."""
        self.jj.out("new", "--no-edit", "--insert-before", task.change_id, "-m", "")
        self._base = self.jj.revs(f"{task.change_id}-")[0].change_id
        basemark.note(self.root, self._base)

    def _sweep(self, rev: Rev, below: bool = False) -> bool:
        """Move the tool's own files out of `rev` into the base; True when anything moved.
        `below`: with no base yet (a lane's first task), one is made right below `rev`."""
        ours = [f for f in rev.files if self._own.holds(f)]
        if ours and below and not self._base:
            self._base_below(rev)
        if not ours or not self._base:
            return False
        # --keep-emptied: a task that only touched the task file is sealed or abandoned by us,
        # not silently by squash (which would also drop the change id we handed out).
        self.jj.out("squash", "--from", rev.change_id, "--into", self._base, "--keep-emptied",
                 "--", fileset(ours))
        return True

    def _one(self, change_id: str) -> tuple[Rev | None, Rev | None]:
        """The task's revision (None when gone) and the working copy's, when @ is not it."""
        revs = self.jj.revs(f"present({change_id}) | @")
        task = next((r for r in revs if r.change_id == change_id), None)
        wc = next((r for r in revs if r.is_wc and r is not task), None)
        return task, wc

    def _wc_on_top(self, task: Rev) -> bool:
        """Whether @ descends from the task's change (the agent ran `jj new` or `jj commit`)."""
        return bool(self.jj.ids(f"{task.change_id}:: & @"))

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
        rev = next((r for r in told if r.is_wc), None) or self.jj.revs("@")[0]
        if made and reuse and rev.files:
            # Files written into the lane before its first task (lane-copy, lane-link,
            # lane-setup) are no task's: that change becomes the base, the task goes on top.
            self.jj.out("describe", "-m", "")
            told, first = self.jj.told("new", "-m", message), True
            rev = next((r for r in told if r.is_wc), None) or self.jj.revs("@")[0]
        if first:
            base = next((r for r in told if not r.is_wc and (r.change_id,) == rev.parents), None)
            self._base = (base or self.jj.revs("@-")[0]).change_id
            basemark.note(self.root, self._base)
        self._messages[rev.change_id] = message
        self._begun_at, self._parked = self._now(), ""
        return Change(change_id=rev.change_id, commit_id=rev.commit_id,
                      base=",".join(rev.parents))

    def _left_as(self, message: str) -> Change | None:
        """A lane's @ that is this task's own change, an earlier run's attempt: dropped when that
        run stopped, and back since (`jj undo`, `jj op restore`), its agent's files in it. The
        task goes on in it, as in a change a killed run kept (Change.kept): begun on top, that
        change became the base, the agent's rewrite of its files an empty task ("changed no
        files") and the work stayed beside the main line. None when @ is another change."""
        wc = self.jj.revs("@")[0]
        if not wc.described:
            return None
        described = self.jj.out("log", "--no-graph", "-r", wc.change_id, "-T", "description")
        if described.strip() != message.strip():
            return None
        self._made, self._began, self._fresh = False, True, False
        self._messages[wc.change_id] = message
        self._begun_at, self._parked = self._now(), ""
        return Change(change_id=wc.change_id, commit_id=wc.commit_id, base=",".join(wc.parents),
                      kept=True,
                      note=f"goes on in its change {wc.change_id[:12]}, which the last run "
                           "dropped when it stopped and is back (`jj undo`?), with the work "
                           "done in it then")

    def _now(self) -> str | None:
        """A lane's operation as its task begins (_park, _moved_back), read off the op heads'
        file, or asked of jj while lanes' operations are being merged; None in your checkout."""
        return operation(self.jj) if self._lane else None

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
        task = sealed
        if self._sweep(task, below=True):
            task = self.jj.revs(task.change_id)[0]
        if task.empty:
            return self._drop_empty(task)
        if task is sealed and wc.empty and not wc.described:
            self._carry(wc, task)
        return Change(change_id=task.change_id, commit_id=task.commit_id,
                      base=",".join(task.parents),
                      files=tuple(f for f in task.files if not self._own.holds(f)))

    def _commit_elsewhere(self, change: Change, message: str) -> Change:
        """`jj commit` sealed a change that is not the task's (or _park found @ off it, and
        there was no commit): the agent ran `jj commit` or `jj new` (its changes go back into
        the task's), or moved @ off the task's change, or the task's change is gone (the
        commit is reverted, and the error says why)."""
        parked = bool(self._parked)
        task, _ = self._one(change.change_id)
        if task is None or not self._wc_on_top(task):
            if not parked:
                self._revert_last()
            if task is None:
                raise VcsError(f"the task's change {change.short} is gone (abandoned by hand?)")
            moved = self._moved_back(task) if self._lane else None
            if moved is None:
                raise VcsError(f"the working copy moved off the task's change "
                               f"{task.change_id[:12]} (did the agent run `jj edit`?); move it "
                               "back and retry")
            self.jj.out("describe", "-r", moved.change_id, "-m", message)
            task = self.jj.revs(moved.change_id)[0]
        else:
            task = self._fold(task, message, checked=True)
        note, self._moved_note = self._moved_note, ""
        if self._sweep(task, below=True):
            task = self.jj.revs(task.change_id)[0]
        if task.empty:
            return Change(change_id="", base=self._drop_empty(task).base, empty=True, note=note)
        self._new_on(task)
        return Change(change_id=task.change_id, commit_id=task.commit_id,
                      base=",".join(task.parents),
                      files=tuple(f for f in task.files if not self._own.holds(f)), note=note)

    def _park(self, change: Change) -> None:
        """Before the first jj command after a lane's agent, which snapshots the lane's files:
        when the agent moved @ off its task's change (`jj edit @-`), a new empty @ on the
        change it moved to, made without a snapshot. jj recorded the files on disk as that
        change's, so the snapshot takes the agent's edits into the new change (_moved_back
        moves them into the task's), not into that one: a task landed before, under your
        checkout's @, whose rewrite would leave your checkout stale. No process unless a jj
        command ran since the begin."""
        if not self._lane or not change.change_id or self._begun_at is None or \
                self._parked or _op(self.root) == self._begun_at:
            return
        # The task's change, when it is there and @ is not on it or on top of it.
        if not self.jj.out("--ignore-working-copy", "log", "--no-graph", "-r",
                           f"present({change.change_id}) ~ ::@", "-T", "change_id"):
            return
        self.jj.out("--ignore-working-copy", "new", "@")
        self._parked = self.jj.out("--ignore-working-copy", "log", "--no-graph", "-r", "@",
                                   "-T", "change_id").strip()

    def _moved_back(self, task: Rev) -> Rev | None:
        """A lane's agent moved @ off its task's change onto another that was there when the
        task began (`jj edit @-`: the change of a task landed before), and wrote there (in your
        checkout such a change may be yours, and stays as the agent left it, the task
        stopped). The agent's edits go into the task's change: those _park's change took, and
        any the agent's own jj commands took into that change, which is put back as it was at
        the begin (read with at_operation; its content, not its commit id: `moved_elsewhere`
        says so, for a lane, whose runner then brings your checkout up to date). @ is the
        task's change again; that change as it is then. None (nothing done) when @ is a change
        the agent made or jj cannot tell what it was at the begin."""
        wc = self.jj.revs("@")[0]
        parked, self._parked = wc.change_id == self._parked, ""
        if self._begun_at is None or (parked and len(wc.parents) != 1):
            return None
        here = self.jj.revs(wc.parents[0])[0] if parked else wc
        was = self.jj.ids(f"at_operation({self._begun_at}, "
                          f"present(change_id({here.change_id})))", "commit_id")
        if len(was) != 1:
            return None
        wrote = parked and bool(wc.files)
        if was[0] != here.commit_id:
            wrote = True
            files = self.jj.out("diff", "--from", was[0], "--to", here.commit_id,
                                "--name-only").split()
            self.jj.out("restore", "--from", was[0], "--into", here.change_id)
            if files:
                self.jj.out("restore", "--from", here.commit_id, "--into", task.change_id,
                            "--", fileset(files))
            self.moved_elsewhere = here.change_id
        if parked and wc.files:
            self.jj.out("squash", "--from", wc.change_id, "--into", task.change_id,
                        "--use-destination-message")
        short = here.change_id[:12]
        self._moved_note = f"its agent moved the working copy onto change {short} (`jj edit`)" + (
            f" and wrote there: its edits were moved into the task's change, and {short} is "
            "as it was" if wrote else ": it is back on the task's change")
        self.jj.out("edit", task.change_id)
        return self.jj.revs(task.change_id)[0]

    def _revert_last(self) -> None:
        """Revert our own `jj commit` (the operation just made), so a change that was not the
        task's keeps its own description and @ stays where the agent left it."""
        head = op_head(self.root)
        if head is not None:
            self.jj.out("op", "revert", head.split(" ", 1)[0])

    def _drop_empty(self, task: Rev) -> Change:
        """Like git making no commit: an empty change would only clutter the history. Its ids
        go with it, so nothing records a change that no longer exists."""
        self.jj.out("abandon", task.change_id)
        return Change(change_id="", base=",".join(task.parents), empty=True)

    def _careful_finish(self, change: Change, message: str) -> Change:
        """finish when `jj commit` failed: a look at what @ and the task's change are first."""
        task, wc = self._one(change.change_id)
        if task is None:
            raise VcsError(f"the task's change {change.short} is gone (abandoned by hand?)")
        if wc is not None:
            task = self._fold(task, message)
        stale = self._sweep(task, below=True)
        if wc is None:  # not folded, which gave the message
            self.jj.out("describe", "-r", task.change_id, "-m", message)
            stale = True
        if stale:
            task = self.jj.revs(task.change_id)[0]
        files = tuple(f for f in task.files if not self._own.holds(f))
        self._fresh = True
        if task.empty:
            return self._drop_empty(task)
        self._new_on(task)
        return Change(change_id=task.change_id, commit_id=task.commit_id,
                      base=",".join(task.parents), files=files)

    def _new_on(self, task: Rev) -> None:
        """`jj new` on the finished task; what it says @ is now is kept for the next begin."""
        fresh = next((r for r in self.jj.told("new", task.change_id) if r.is_wc), None)
        if fresh is not None:
            self._carry(fresh, task)

    def _carry(self, fresh: Rev, task: Rev) -> None:
        """Keep `fresh`, the empty @ just made on the finished task, for the next begin."""
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

    def _fold(self, task: Rev, message: str, checked: bool = False) -> Rev:
        """The agent ran `jj new`/`jj commit` itself: squash its changes back into the task's
        (`checked`: @ is known to descend from it)."""
        if not checked and not self._wc_on_top(task):
            raise VcsError(f"the working copy moved off the task's change {task.change_id[:12]} "
                           "(did the agent run `jj edit`?); move it back and retry")
        self.jj.out("squash", "--from", f"{task.change_id}..@", "--into", task.change_id,
                 "-m", message)
        return self.jj.revs(task.change_id)[0]

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
        task, wc = self._one(change.change_id) if change.change_id else (None, None)
        if task is None:
            return None
        if keep and not self._began and wc is not None and self._wc_on_top(task):
            self._resumable = task.change_id
            return None
        # Not begun by this run: a killed run's, whichever task's turn it is (in your checkout
        # one backend serves every group, so others may have begun), taken up or not.
        if message is None and wc is not None and self._took_in_a_lane(task.change_id):
            task = self.jj.revs(task.change_id)[0]
        # With no base (before the first begin, an earlier run's leftover; in a new lane, whose
        # first task began right on the tip) the tool's files are put back on disk instead,
        # where the next snapshot takes them into @.
        saved = {} if self._base else {
            f: (self.root / f).read_bytes() for f in task.files
            if self._own.holds(f) and (self.root / f).is_file()}
        self._sweep(task)
        wc_goes = wc is None or self._wc_on_top(task)
        tip = wc.change_id if wc is not None and wc_goes else task.change_id
        kept = keep_aside(self.jj, self.jj.revs(task.change_id)[0], tip, message)
        self.jj.out("abandon", f"{task.change_id} | ({task.change_id}:: & ::@)")
        for rel, data in saved.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_bytes(data)
        # jj gives an abandoned working-copy commit a new, empty one on its parent.
        self._fresh = wc_goes
        return kept

    def _took_in_a_lane(self, change_id: str) -> bool:
        """A killed run's attempt that is @ of one of this checkout's lanes (that run worked
        in lanes, this one works here): its agent's files are on disk in the lane, never taken
        into the change (finish's `jj commit` does that, or the lane's next command), so kept
        aside from here it held nothing, and the agent was paid again. Taken in now by a
        command run in that lane; whether one was."""
        out = self.jj.out("--ignore-working-copy", "log", "--no-graph", "-r", change_id, "-T",
                          "working_copies")
        took = False
        for name in (w.removesuffix("@") for w in out.split()):
            path = lane_folder(self.root, name)
            if path is None or not (path / ".jj").is_dir():
                continue
            try:
                self.jj.out("log", "--no-graph", "-r", "@", "-T", "change_id", cwd=path)
            except VcsError:
                continue  # a lane jj cannot read (stale, say): its change as it is
            took = True
        return took

    def began(self, change_id: str) -> bool:
        """Whether this run's begin made the change (not finished or abandoned since). A
        killed run's is not, even once this run took it up (`_resume`): that run may have
        worked in another workplace, whose working copy may sit on the change (your checkout's
        @ on it, where its agent ran `jj new`; a lane's @, its files on disk there only), which
        dropping it leaves to be seen to (LaneJj.abandon, _took_in_a_lane)."""
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
        """The kept change taken up by this begin, described as the task; None (the change
        abandoned after all) when it is gone or @ no longer sits on it."""
        change_id, self._resumable = self._resumable, ""
        task, wc = self._one(change_id)
        if task is None:
            return None
        if wc is None or not self._wc_on_top(task):
            self.abandon(Change(change_id=change_id))
            return None
        # The base takes the tool's files that the agent's own `jj` call tracked (the task
        # file): a new empty change right below the task's, never its parent, which may be a
        # task's change (landed even); dropped at close if nothing went into it. One an earlier
        # resume of this change put there (and was killed before it was dropped) serves again:
        # a kill at every re-run piles no empty changes up.
        below = self.jj.revs(f"{change_id}- & mutable() & empty()")
        if len(below) != 1 or below[0].described or len(task.parents) != 1:
            self.jj.out("new", "--no-edit", "--insert-before", change_id, "-m", "")
            below = self.jj.revs(f"{change_id}-")
        self._base = below[0].change_id
        basemark.note(self.root, self._base)
        self.jj.out("describe", "-r", change_id, "-m", message)
        # Not noted as begun by this run (began): it is still the killed run's change.
        self._begun_at, self._parked = self._now(), ""
        task = self.jj.revs(change_id)[0]
        return Change(change_id=change_id, commit_id=task.commit_id, base=",".join(task.parents),
                      kept=True)

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
        self._drop_unused_base()

    def _drop_unused_base(self) -> None:
        """Abandon the base when it ended up empty and undescribed under the tasks.

        That is what jj does itself to such a change once it stops being @; left in place it
        would show as a blank commit under the first task (in `git log` too, when colocated).
        """
        if not self._base:
            return
        basemark.drop_unused(self.jj, self._base)
        basemark.forget(self.root)

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
        task, wc = self._one(change_id)
        if task is None or wc is None or task.empty or wc.parents != (change_id,) or \
                wc.described or not all(self._own.holds(f) for f in wc.files):
            return None
        described = self.jj.out("log", "--no-graph", "-r", change_id, "-T", "description")
        if trailers not in described:
            return None
        return Change(change_id=change_id, commit_id=task.commit_id, base=",".join(task.parents),
                      files=tuple(f for f in task.files if not self._own.holds(f)))


def _op(root: Path) -> str | None:
    """The id of the operation jj is at, read without a process (run.op_head)."""
    head = op_head(root)
    return head.split(" ", 1)[0] if head else None


def _lane_gone(where: Path) -> Exception:
    """A lane whose jj workspace was removed (its .jj gone, by its agent or from outside): a
    stop of its group, which says so, never a command run in the checkout around it."""
    return LaneBreach(jj_removed(where))
