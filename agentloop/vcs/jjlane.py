"""jj in a parallel run: each group works in a jj workspace of its own (agentloop.vcs.workspaces)
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
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from agentloop import proc
from agentloop.errors import ProcessError, VcsError
from agentloop.vcs import Change
from agentloop.vcs.history import missing
from agentloop.vcs.jj import JjVcs
from agentloop.vcs.jjplumb import JJ, _env
from agentloop.vcs.mainline import POLL_SECONDS, IntegrationConflict, markers_left


def jj(root: Path, *args: str) -> str:
    """One jj command in `root`; VcsError with jj's message when it fails."""
    try:
        return proc.run([*JJ, *args], cwd=root, env=_env(), timeout=600).stdout
    except ProcessError as exc:
        raise VcsError(f"`jj {args[0]}` failed: {exc.output or exc}") from None


def _ids(root: Path, revset: str, template: str = "change_id") -> list[str]:
    out = jj(root, "log", "--no-graph", "-r", revset, "-T", template + ' ++ "\\n"')
    return out.split()


def _files(root: Path, revset: str) -> set[str]:
    return set(jj(root, "diff", "-r", revset, "--name-only").split())


class JjMainLine:
    """The line of @ in the main checkout; landings take one lock in turn."""

    def __init__(self, root: Path, on_wait: Callable[[str], None] | None = None,
                 stopping: Callable[[], bool] | None = None) -> None:
        self.root = root
        self.on_wait = on_wait or (lambda text: None)
        self.stopping = stopping or (lambda: False)
        self._lock = threading.Lock()

    def tip(self) -> str:
        """The main line's newest change: @'s parent in the main checkout."""
        return _ids(self.root, "@-")[0]

    def forget(self, commits: list[str]) -> None:
        """Nothing to forget: a jj change keeps its id wherever it lands."""

    def forget_all(self) -> None:
        """Nothing to forget (see forget)."""

    def land(self, change: str, lane_wc: str) -> str:
        """Put `change` under the main checkout's @; the lane's @ (`lane_wc`, a workspace's
        `name@`) onto it. The change's new commit id; IntegrationConflict when it does not fit."""
        told = False
        while True:
            with self._lock:
                busy = sorted(_files(self.root, change) & _files(self.root, "@"))
                if not busy:
                    return self._insert(change, lane_wc)
            if not told:
                told = True
                self.on_wait(f"waiting: your uncommitted edits to {', '.join(busy[:5])} in "
                             f"{self.root} overlap a finished task's change; commit them "
                             "(`jj commit`) and it lands")
            if self.stopping():
                raise VcsError(f"stopped before change {change[:12]} reached the main line")
            time.sleep(POLL_SECONDS)

    def _insert(self, change: str, lane_wc: str) -> str:
        before = _ids(self.root, f"{change}-")
        onto = self.tip()
        jj(self.root, "rebase", "-r", change, "--insert-before", "@")
        if _ids(self.root, f"conflicts() & {change}"):
            files = tuple(sorted(_files(self.root, change)))
            # Put it back: the main line (and the user's checkout) as it was.
            jj(self.root, "rebase", "-r", change, "-d", before[0])
            jj(self.root, "rebase", "-s", lane_wc, "-d", change)
            raise IntegrationConflict(change, files, onto)
        jj(self.root, "rebase", "-s", lane_wc, "-d", change)
        return _ids(self.root, change, "commit_id")[0]


class LaneJj(JjVcs):
    """One group's jj workspace; finished tasks land on `main`."""

    def __init__(self, workspace: Path, task_file: Path, main: JjMainLine, name: str) -> None:
        super().__init__(workspace, task_file, initialized=True)
        self.main = main
        self.workspace = name
        self.lane_commits: list[str] = []

    def prepare(self) -> list[str]:
        """As any jj working copy, with git's conflict markers: the ones agents know best."""
        notes = super().prepare()
        self._config += ["--config", "ui.conflict-marker-style=git"]
        return notes

    def finish(self, change: Change, message: str) -> Change:
        """Seal the change in the lane, then land it on the main line."""
        return self._landed(super().finish(change, message))

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Finished tasks' changes no longer on the main line."""
        return missing("jj", self.main.root, change_ids)

    def settled(self, change_id: str) -> Change | None:
        """A task's change an earlier run landed and was killed before recording: on the main
        line already, so it is the task's, not an attempt to drop and run again."""
        if not change_id or not _ids(self.main.root, f"present({change_id}) & ::@- & ~empty()"):
            return None
        commit = _ids(self.main.root, change_id, "commit_id")[0]
        return Change(change_id=change_id, commit_id=commit,
                      files=tuple(sorted(_files(self.main.root, change_id))))

    def _landed(self, done: Change) -> Change:
        if done.empty or not done.change_id:
            return done
        commit = self.main.land(done.change_id, f"{self.workspace}@")
        self._run("workspace", "update-stale")  # the lane's @ moved under it
        return dataclasses.replace(done, commit_id=commit)

    # -- conflicts --------------------------------------------------------------------------

    def open_conflict(self, conflict: IntegrationConflict) -> list[str]:
        """The task's change on the main line's tip in the lane, jj's conflict markers on disk
        in a new @ on top of it; the conflicted files."""
        self._jj("rebase", "-r", conflict.commit, "-d", conflict.onto)
        self._jj("new", conflict.commit)
        out = self._jj("resolve", "--list", "-r", conflict.commit)
        return [line.split()[0] for line in out.splitlines() if line.strip()] or \
            list(conflict.files)

    def markers_left(self, files: Iterable[str]) -> list[str]:
        """Which of `files` still hold a conflict marker at the start of a line."""
        return markers_left(self.root, files)

    def close_conflict(self, conflict: IntegrationConflict) -> Change:
        """The resolution squashed into the task's change, which then lands."""
        self._jj("squash", "--into", conflict.commit)
        if _ids(self.root, f"conflicts() & {conflict.commit}"):
            raise IntegrationConflict(conflict.commit, conflict.files, conflict.onto)
        files = tuple(sorted(_files(self.root, conflict.commit)))
        return self._landed(Change(change_id=conflict.commit, files=files))

    def drop_conflict(self, conflict: IntegrationConflict) -> None:
        """Unresolved: the change stays (jj keeps both sides in it), under a bookmark."""
        self._jj("bookmark", "set", "--allow-backwards", self.lane_branch(), "-r",
                 conflict.commit)
        self._jj("new", conflict.commit)

    def lane_branch(self) -> str:
        """The bookmark a conflicted change of this lane is kept under."""
        return "agent-loop/" + self.workspace.removeprefix("agent-loop-")

    def kept(self, change_id: str) -> str:
        """What a conflicted task lands as on a later run: its change (resolved by hand or not)."""
        return change_id

    def land_again(self, change: str) -> Change:
        """A conflicted task's change tried on the main line once more."""
        if _ids(self.root, f"conflicts() & {change}"):
            raise IntegrationConflict(change, tuple(sorted(_files(self.root, change))),
                                      self.main.tip())
        return self._landed(Change(change_id=change))

    def main_commits_touching(self, commit: str, onto: str, files: list[str]) -> list[str]:
        """The main line's changes since `commit` branched off that changed `files`."""
        revset = f"({commit}-)..{onto} & files({' | '.join(_quoted(f) for f in files)})"
        try:
            return _ids(self.root, revset)
        except VcsError:
            return []

    def help_lines(self, where: str, main: str = "@-") -> str:
        """How a person looks at a conflicted change and goes on."""
        branch = self.lane_branch()
        return (f"its change is kept under bookmark {branch}: `jj log -r {branch}` and "
                f"`jj diff -r {branch}` show it; resolve it with `jj new {branch}`, fix the "
                "files, `jj squash`, then run agent-loop again with --parallel to land it")


def _quoted(path: str) -> str:
    return 'root-file:"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
