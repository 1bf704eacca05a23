"""jj in a parallel run: each group works in a jj workspace of its own (agentloop.vcs.jj.workspaces)
and each finished task's change goes onto the main line (the line of @ in the main checkout's
workspace) by `jj rebase -r <task> --insert-before @`, run from the main checkout: the change
keeps its change id, the main checkout's @ (the user's own edits, if any) sits on top of it, and
the lane's @ follows it (`jj rebase -s <lane>@ -d <task>`), so the group's next task starts from
the main line with every group's work so far. A rebase exits 0 on a conflict; `conflicts()`
tells, and a conflicting change is put back where it was, the main line untouched.

As with git, a change does not land while the user's own edits in @ touch a file it changes:
the lane waits, saying so once.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs.breach import Kind, LaneBreach
from agentloop.vcs.history import missing
from agentloop.vcs.jj.aside import keep_finished, kept_finished
from agentloop.vcs.jj.backend import JjVcs
from agentloop.vcs.jj.lane_check import JjLaneRecord, check_jj_lane, operation, recheck_jj_lane
from agentloop.vcs.jj.mainline import JjMainLine
from agentloop.vcs.jj.revive import revive, said
from agentloop.vcs.jj.run import DIVERGENT, STALE, Jj, op_head, op_id
from agentloop.vcs.jj.symbols import literal, typed_symbol
from agentloop.vcs.jj.takenback import revived, taken_back
from agentloop.vcs.jj.workspaces import lane_of
from agentloop.vcs.landing import IntegrationConflict, markers_left
from agentloop.vcs.lanes import BRANCH_PREFIX
from agentloop.vcs.protocol import Change

T = TypeVar("T")

# The stops whose finished agent's work is kept (LaneJj._kept): an operation undone or restored
# under the step, by you or an agent.
_KEPT = (Kind.OPERATION_UNDONE,)


class LaneJj:
    """One group's jj workspace; finished tasks land on `main`."""

    name = "jj"
    lost_hint = JjVcs.lost_hint

    def __init__(self, workspace: Path, task_file: Path, main: JjMainLine, name: str,
                 made: bool = False) -> None:
        # `made`: the workspace was just added, on the main line's tip.
        self.work = JjVcs(workspace, task_file, initialized=True, auto_track=main.auto_track,
                          made=made, lane=True)
        self.main = main
        self.workspace = name
        self.lane_commits: list[str] = []
        self.landed: list[str] = []         # the change ids this lane landed
        # The repository's operation when the lane's step began (agentloop.vcs.jj.lane_check).
        self.record: JjLaneRecord | None = None
        # The operation at which every finished task's change was last known below the main
        # checkout's @, carried over the lane's own commands (JjVcs.missing does the same).
        self._whole: str | None = None
        # The repository's operation at which the lane's @ was known to sit on the main line's
        # tip (after its landing, its follow, its catch-up): while jj is still there, the main
        # line has not moved (behind, no process); and the tip behind() found it moved to.
        # (A workspace just added was added on the tip: known without a look.)
        self._synced: str | None = op_head(main.root) if made else None
        self._tip: str | None = None
        # What to say of the lane's workspace brought back after its agent forgot it (said
        # with the task's landing, or its roll-back): "" when it was not.
        self._revival = ""
        if main.began is None:
            main.began = op_id(main.root)

    @property
    def root(self) -> Path:
        """The lane's workspace."""
        return self.work.root

    @property
    def jj(self) -> Jj:
        """The workspace's jj runner."""
        return self.work.jj

    def prepare(self) -> list[str]:
        """As any jj working copy, with git's conflict markers: the ones agents know best."""
        notes = self.work.prepare()
        self.jj.config += ["--config", "ui.conflict-marker-style=git"]
        return notes

    def begin(self, message: str) -> Change:
        """Start a task's change in the workspace, and note the operation jj is at."""
        before = op_head(self.main.root)
        change = self._up_to_date(lambda: self.work.begin(message))
        stamp = op_head(self.main.root)
        if before is not None and before == self._whole:
            self._whole = stamp
        try:
            stood_on = tuple(p for p in change.base.split(",")
                             if p and not p.startswith("zzzzzzzz") and p not in self.landed)
            self.record = JjLaneRecord(self.root, self.main.root, operation(self.main.jj),
                                       tuple(self.landed), stamp, stood_on)
        except VcsError:
            self.record = None  # no record, no check: the step itself says what broke
        return change

    def check(self, finished: Change | None = None, message: str = "") -> None:
        """Trust nothing the agent could touch: LaneBreach when it undid an operation or a
        change this lane landed went from the main line. `finished`: the task's change, its
        agent finished (finish, its `message`): its work kept aside first (_kept)."""
        if self.record is None:
            return
        try:
            breach = check_jj_lane(self.record, frozenset(self.main.revived))
        except VcsError:
            return
        if breach is not None and breach.stops:
            record, revived = self.record, frozenset(self.main.revived)
            kept = self._kept(breach.kind, finished, message)
            if kept:
                breach = dataclasses.replace(breach, line=f"{breach.line}; {kept}")
            raise LaneBreach(breach, kept, recheck=lambda: recheck_jj_lane(record, revived))

    def _kept(self, kind: Kind, finished: Change | None, message: str) -> str | None:
        """A finished agent's work kept aside from a step stopped on a history that moved
        under it (an undo or restore, yours or an agent's: its repair may take the task's
        change back to before the agent worked), for the next run to land without paying the
        agent again (LaneBreach.kept, brought back by bring_back); the line, or None. A kill
        before the stop is recorded: the next run finds it by the task's change
        (finished_kept)."""
        if finished is None or not finished.change_id or kind not in _KEPT:
            return None
        try:
            return keep_finished(self.jj, finished.change_id, message)
        except VcsError:
            return None  # the stop says what happened; the work stays in the lane's folder

    def finished_kept(self, change_id: str) -> str | None:
        """Where a stop kept the finished agent's work of the task's change `change_id` (_kept),
        for the run after one killed before it recorded the stop (KeepsFinished)."""
        try:
            return kept_finished(self.jj, change_id)
        except VcsError:
            return None  # the attempt is dropped as any killed one; its agent runs again

    def abandon(self, change: Change) -> str | None:
        """Drop the attempt's change, kept aside first. One this run did not begin (JjVcs.began:
        a killed run's, taken up by this run or not) may be one begun in your checkout (that
        run worked there) that your checkout's @ is or sits on: dropped from here, jj gives
        your checkout a new @ and leaves its files as they were until it is brought up to
        date ("The working copy is stale", which the task's landing, a command run in your
        checkout, met and stopped the run on). Brought up to date at once (a no-op when it was
        not stale), before the task begins again here. The same when its agent moved the
        lane's @ onto a task landed before and its own jj command rewrote that change (put
        back by the abandon, as by finish)."""
        ours = self.work.began(change.change_id)
        kept = self._unforgotten(lambda: self.work.abandon(change))
        revival, self._revival = self._revival, ""
        if revival:
            kept = f"{kept}; {revival}" if kept else revival
        moved, self.work.moved_elsewhere = self.work.moved_elsewhere, None
        if moved and self.main.catch_up():
            kept = (f"{kept}; " if kept else "") + _stood_on(moved)
        if ours or not change.change_id:
            return kept
        if self.main.catch_up() and kept:
            # jj snapshots the checkout's files into the commit it last knew there, the attempt
            # just dropped, shows that change again and takes those files off the disk.
            short = change.change_id[:12]
            kept += (f"; edits made in your checkout since the run began were taken by jj into "
                     f"change {short} (the attempt dropped here, which `jj log` shows again), "
                     f"not left on disk: `jj restore --from {short} <file>` brings one back")
        return kept

    def keeps(self, change_id: str) -> bool:
        """Whether `abandon` kept the change for its task's next begin (JjVcs.keeps)."""
        return self.work.keeps(change_id)

    def bring_back(self, kept: str) -> bool:
        """Kept edits back in the lane's change."""
        return self.work.bring_back(kept)

    def diff(self, change: Change) -> str:
        """The change's diff."""
        return self._unforgotten(
            lambda: self._fresh(change, lambda: self.work.diff(change), lambda: ""))

    def _unforgotten(self, step: Callable[[], T]) -> T:
        """`step`, run again once the lane's workspace is brought back when it met the
        workspace forgotten (its agent's `jj workspace forget`): the agent's change and files
        are all there still (agentloop.vcs.jj.revive). What the agent did before the forget is
        checked first, as at any landing (an undo of its stops the group as ever)."""
        try:
            return step()
        except LaneBreach as stop:
            if stop.breach.kind is not Kind.JJ_FORGOTTEN or self.record is None:
                raise
            self.check()
            # From the run's first operation, not this step's: with lanes side by side, another
            # lane's agent may have forgotten this workspace before this step began.
            found = revive(self.main.jj, self.main.root, self.workspace,
                           self.main.began or self.record.operation, self.main.revived)
            if found is None:
                raise
        self._revival = said(found)
        return step()

    def close(self) -> None:
        """Leave the workspace; nothing to do when its .jj is gone (removed by its agent): the
        step that met that stopped the group and said so, and any jj command here would only
        raise that stop again (LaneBreach), in place of the step's. A workspace left stale (you
        rewrote a change under it as the group stopped) is brought up to date first: its
        "stale" error would stand in place of the stop that came first."""
        if not (self.root / ".jj").is_dir():
            return
        try:
            self.work.close()
        except LaneBreach as stop:
            # Forgotten once this lane's last step was done (another lane's agent forgot every
            # workspace): its tasks are landed, there is nothing of it left to close.
            if stop.breach.kind is not Kind.JJ_FORGOTTEN:
                raise
        except VcsError as exc:
            if STALE not in str(exc):
                raise
            self.jj.run("workspace", "update-stale")
            self.work.close()

    def follow(self) -> None:
        """The next group goes on in this workspace, every task of the last one landed and
        saved: from the main line's tip as it is now (the user may have committed meanwhile).
        One `jj log` for the tip; when the lane's @ is not on it already, one `jj new` there
        (jj drops the empty @ it leaves)."""
        landed, self.landed = self.landed, []   # what this group lands is checked from here on
        self.lane_commits.clear()
        before, op = proc.started(), op_head(self.root)
        tip = self.main.tip()
        if landed and landed[-1] == tip:  # @ sits on the last change this lane landed
            self.work.carry(before, op)   # that look changed nothing: finish's @ still holds
            self._synced = op_head(self.main.root)
            return
        self.work.start_over(tip)
        self._synced = op_head(self.main.root)

    def behind(self) -> bool:
        """Whether the main line moved on since the lane's @ was put on its tip (your `jj
        commit`, another lane's or another plan's landing), so the next task would start on an
        old tree. No process while the repository is at the operation the lane's last landing
        (or follow, or catch-up) left; else one `jj log` that writes nothing: the main line's
        tip when the lane's @ does not descend from it. A move leaves the tip for catch_up; a
        lane whose @ holds work of its own is not behind (catch_up would leave it)."""
        now = op_head(self.main.root)
        if now is not None and now == self._synced:
            return False
        lane = f"{self.workspace}@"
        before, op = proc.started(), op_head(self.root)
        out = self.main.jj.out(
            "--ignore-working-copy", "log", "--no-graph", "-r",
            f"(@- ~ ::{lane}) | ({lane} & ~empty())",
            "-T", f'if(self.contained_in("{lane}"), "lane ", "") ++ change_id ++ "\\n"')
        self.work.carry(before, op)  # a look that moved nothing: finish's @ still holds
        lines = out.split("\n")
        tips = [line for line in lines if line and not line.startswith("lane ")]
        if len(tips) == len([line for line in lines if line]):
            self._tip = tips[0] if tips else None
        else:
            # @ holds work of its own (a killed run's attempt its task goes on from): left as
            # it is, its landing meets the main line as ever, a conflict going to the group's
            # session like any landing's.
            self._tip = None
        if self._tip is None:
            self._synced = now
        return self._tip is not None

    def catch_up(self) -> bool:
        """The lane's @, empty between tasks (finish left it so), replaced by a new one on the
        main line's tip that behind() found (one `jj new`, which drops the empty @ it leaves):
        the group's session goes on, its files those of the main line now. Every task of the
        group landed already, so nothing of the lane's is left behind."""
        tip, self._tip = self._tip, None
        if tip is None:
            return False
        try:
            self._up_to_date(lambda: self.work.start_over(tip))
        except VcsError:
            return False  # left as it was: the task's landing meets the main line as ever
        self._synced = op_head(self.main.root)
        return True

    def _up_to_date(self, step: Callable[[], T]) -> T:
        """`step` (between tasks: begin, catch_up), run again once the workspace is brought up
        to date when it met "The working copy is stale": you rewrote a change this lane stands
        on (a fix squashed into a task it landed), jj rebased the lane's @ with it, and the
        workspace waits to be brought up to date. Between tasks @ holds nothing of the
        agent's, so nothing is lost by that."""
        try:
            return step()
        except VcsError as exc:
            if STALE not in str(exc):
                raise
        self.jj.run("workspace", "update-stale")
        return step()

    def _fresh(self, change: Change, step: Callable[[], T], gone: Callable[[], T]) -> T:
        """`step`, after bringing the lane up to date when it meets "The working copy is stale":
        you rewrote a change the lane's @ stands on while the agent worked (a task's change
        abandoned in your checkout, the documented way to take it back), and jj rebased @ with
        it. Nothing of the agent's is lost by that: `jj workspace update-stale` snapshots its
        files into the commit @ was, which jj then rebases beside the rewritten @ (a divergent
        copy of the task's change); squashed back into @, the task's change holds them again
        (as a conflict where the agent edited a file the abandoned change had made). The same
        when the task's change "is divergent": your abandon ran at the moment a jj command of
        ours did, each on the view before the other, and jj, merging the two, kept a copy of
        the change from each: @ is the task's, the other copy goes into it. `gone` when the
        step failed because you abandoned the task's change itself in your checkout (it stays
        taken back: jj's own "doesn't exist" or stale working copy is no error of the run)."""
        try:
            return step()
        except VcsError as exc:
            error = exc
        again = STALE in str(error) or DIVERGENT in str(error)
        if again:
            self.jj.run("workspace", "update-stale")
        if self._taken(change):
            return gone()
        if not again:
            raise error
        task = change.change_id
        if task and self.jj.ids(f"@ & change_id({task})"):
            for commit in self.jj.ids(f"change_id({task}) ~ @", "commit_id"):
                self.jj.run("squash", "--from", commit, "--into", "@",
                            "--use-destination-message")
        return step()

    def _taken(self, change: Change) -> bool:
        """Whether you abandoned the task's change in your checkout while its agent worked
        (agentloop.vcs.jj.takenback): gone, or brought back by a jj command of ours that ran
        at the same moment (then abandoned again here, as you asked). Asked only after a step
        failed."""
        task = change.change_id
        if not task:
            return False
        try:
            if not self.main.jj.ids(f"present(change_id({task}))", "commit_id"):
                return bool(taken_back(self.main.jj, {task}))
        except VcsError:
            return False
        back = revived(self.main.jj, [task], self.main.began)
        if back:
            self.main.drop(back)
        return bool(back)

    def _given_up(self, change: Change) -> Change:
        """finish of a task whose change you abandoned while its agent worked: what the agent
        wrote since (jj took it into the lane's new @, bringing the lane up to date) is dropped
        with that @, as you asked, and nothing lands; the change as it was, for the record,
        which the history check then finds taken back by you (said there, and the task is not
        run again)."""
        self.jj.run("workspace", "update-stale")  # "not stale": a no-op
        self.work.given_up(change.change_id)
        return change

    def recovered(self) -> Change | None:
        """Never (see JjVcs.recovered; a finished change is found by `settled`)."""
        return None

    def finish(self, change: Change, message: str) -> Change:
        """Check the lane, seal the change in it, then land it on the main line."""
        self.check(change, message)
        before = op_head(self.main.root)
        whole = before is not None and self.record is not None and \
            self.record.stamp == before == self._whole  # no jj but ours since the begin
        sealed = self._unforgotten(lambda: self._fresh(
            change, lambda: self.work.finish(change, message), lambda: self._given_up(change)))
        revival, self._revival = self._revival, ""
        if revival:
            sealed = dataclasses.replace(sealed, note="; ".join(n for n in (sealed.note, revival)
                                                                if n))
        if sealed is change:  # you took it back: nothing lands (history_check says so)
            return sealed
        moved, self.work.moved_elsewhere = self.work.moved_elsewhere, None
        if moved and self.main.catch_up():
            # Your checkout was left stale, and is brought up to date before the landing (a
            # command run there): see _stood_on.
            sealed = dataclasses.replace(sealed, note=sealed.note + "; " + _stood_on(moved))
        done = self._landed(sealed, fresh=True)
        now = op_head(self.main.root)
        self._whole = now if whole else None
        # Landed, the lane's @ sits on the change, the main line's tip (nothing landed: not
        # known, behind() asks).
        self._synced = None if done.empty or not done.change_id else now
        return done

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Finished tasks' changes no longer on the main line (known without a look while no
        jj command but the lane's own ran since the last look found them all)."""
        self.commits: dict[str, str] = {}  # what this call's look found (_check_history)
        now = op_head(self.main.root)
        if now is not None and now == self._whole:
            return set()
        ids = list(change_ids)
        lost = missing("jj", self.main.root, ids, self.commits)
        # A change you abandoned that our concurrent jj command brought back (on the line or
        # beside it) is abandoned again: lost, and found taken back by you (taken_back).
        back = revived(self.main.jj, ids, self.main.began)
        if back:
            self.main.drop(back)
            lost |= back
        self._whole = now if not lost else None
        return lost

    def taken_back(self, lost: set[str]) -> set[str]:
        """Of `lost`, the changes you abandoned in your checkout (vcs.protocol.TakesBack)."""
        return taken_back(self.main.jj, lost)

    def settled(self, change_id: str, trailers: str) -> Change | None:
        """A task's change an earlier run finished and was killed before recording: the task's,
        not an attempt to drop and run again. On the main line already, or sealed in the lane
        (JjVcs.settled) and landed now: IntegrationConflict or LandingHeld as in finish."""
        if not change_id:
            return None
        if not self.main.jj.ids(f"present({change_id}) & ::@- & ~empty()"):
            sealed = self.work.settled(change_id, trailers)
            return self._landed(sealed) if sealed is not None else None
        commit = self.main.jj.ids(change_id, "commit_id")[0]
        return Change(change_id=change_id, commit_id=commit,
                      files=tuple(sorted(self.main.jj.files(change_id))))

    def _landed(self, done: Change, fresh: bool = False) -> Change:
        """`done` on the main line; `fresh`: a change finish just made on `done.base`."""
        if done.empty or not done.change_id:
            return done
        made = (done.base, done.commit_id, frozenset(done.files)) \
            if fresh and done.base and "," not in done.base and done.commit_id else None
        before, op = proc.started(), op_head(self.root)
        commit = self.main.land(done.change_id, f"{self.workspace}@", made)
        self.landed.append(done.change_id)
        if made is not None and commit == done.commit_id:
            self.work.carry(before, op)  # neither the change nor the lane's @ was rewritten
        else:
            self.jj.run("workspace", "update-stale")  # the lane's @ moved under it
        return dataclasses.replace(done, commit_id=commit)

    # -- conflicts --------------------------------------------------------------------------

    def open_conflict(self, conflict: IntegrationConflict) -> list[str]:
        """The task's change on the main line's tip in the lane, jj's conflict markers on disk
        in a new @ on top of it; the conflicted files."""
        self.jj.out("rebase", "-r", conflict.commit, "-d", conflict.onto)
        self.jj.out("new", conflict.commit)
        out = self.jj.out("resolve", "--list", "-r", conflict.commit)
        return [line.split()[0] for line in out.splitlines() if line.strip()] or \
            list(conflict.files)

    def markers_left(self, files: Iterable[str]) -> list[str]:
        """Which of `files` still hold a conflict marker at the start of a line."""
        return markers_left(self.root, files)

    def close_conflict(self, conflict: IntegrationConflict) -> Change:
        """The resolution squashed into the task's change, which then lands."""
        self.jj.out("squash", "--into", conflict.commit)
        if self.jj.ids(f"conflicts() & {conflict.commit}"):
            raise IntegrationConflict(conflict.commit, conflict.files, conflict.onto)
        files = tuple(sorted(self.jj.files(conflict.commit)))
        return self._landed(Change(change_id=conflict.commit, files=files))

    def drop_conflict(self, conflict: IntegrationConflict) -> None:
        """Unresolved: the change stays (jj keeps both sides in it), under a bookmark."""
        self.jj.out("bookmark", "set", "--allow-backwards", self.lane_branch(), "-r",
                 conflict.commit)
        self.jj.out("new", conflict.commit)

    def lane_branch(self) -> str:
        """The bookmark a conflicted change of this lane is kept under."""
        lane = lane_of(self.workspace)
        return BRANCH_PREFIX + (self.workspace if lane is None else lane)

    def kept(self, change_id: str) -> str:
        """What a conflicted task lands as on a later run: its change (resolved by hand or not)."""
        return change_id

    def land_again(self, change: str) -> Change:
        """A conflicted task's change tried on the main line once more."""
        if self.jj.ids(f"conflicts() & {change}"):
            raise IntegrationConflict(change, tuple(sorted(self.jj.files(change))),
                                      self.main.tip())
        done = self._landed(Change(change_id=change))
        # What landed, as a task's own landing names it (its change was made by an earlier run).
        return dataclasses.replace(done, files=tuple(sorted(self.main.jj.files(change))))

    def main_commits_touching(self, commit: str, onto: str, files: list[str]) -> list[str]:
        """The main line's changes since `commit` branched off that changed `files`."""
        revset = f"({commit}-)..{onto} & files({' | '.join(_quoted(f) for f in files)})"
        try:
            return self.jj.ids(revset)
        except VcsError:
            return []

    def help_lines(self, where: str, main: str = "@-") -> str:
        """How a person looks at a conflicted change and goes on."""
        branch = self.lane_branch()
        at = typed_symbol(branch)
        return (f"its change is kept under bookmark {branch}: `jj log -r {at}` and "
                f"`jj diff -r {at}` show it; resolve it with `jj new {at}`, fix the "
                "files, `jj squash`, then run the same agent-loop command again to land it")


def _stood_on(moved: str) -> str:
    """What to tell you once the agent moved the lane's @ onto `moved`, a task's landed change
    under your checkout's @ (`jj edit @-`), its own jj command rewrote that change (put back
    since), and your checkout, left stale, was brought up to date: files you had edited there
    meanwhile jj keeps in a copy of your @ beside it."""
    return (f"your checkout stood on {moved[:12]} and was brought up to date, and jj kept the "
            "files you edited there meanwhile in a copy of your working-copy change (`jj log "
            "-r 'divergent()'` shows it; `jj restore --from <its commit id> <file>` brings one "
            "back)")


def _quoted(path: str) -> str:
    return "root-file:" + literal(path)
