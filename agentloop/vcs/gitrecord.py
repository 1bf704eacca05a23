"""The git backend's open-attempt record: written to the git dir while a task is open, so the
next run can tell what became of an attempt whose run died (committed: keep the commit; not:
roll it back, keeping a copy), and carried from one task's finish to the next task's begin."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import time
from pathlib import Path

from gitdb.exc import BadName, BadObject
from gitdb.util import hex_to_bin

from agentloop import proc
from agentloop.errors import VcsError
from agentloop.vcs import Change
from agentloop.vcs.gitplumb import (
    EMPTY_TREE,
    OPEN_ATTEMPT,
    SAVED_REF,
    GitPlumbing,
    _split,
    _Start,
    index_seen,
)

# How long after a task's commit the next task may begin without looking at the tree again.
CARRY_SECONDS = 0.5


class GitRecord(GitPlumbing):
    """The record of the open attempt, and what a run makes of one an earlier run left."""

    def abandon(self, change: Change) -> None:
        raise NotImplementedError  # agentloop.vcs.git

    def _missing(self, start: _Start) -> bool:
        """Whether an object the roll-back needs is gone (say, `git gc` pruned a stored blob)."""
        # git knows the empty tree without storing it.
        shas = [*([start.index_tree] if start.index_tree != EMPTY_TREE else []),
                *([start.head] if start.head else [])]
        shas += [s.split(":", 1)[1] for s in start.states.values() if s.startswith("100")]
        for sha in shas:
            try:
                self.repo.odb.info(hex_to_bin(sha))
            except (ValueError, BadName, BadObject):
                return True
        return False

    def _ours(self, start: _Start, head: str | None) -> bool:
        """Whether `head` is the commit finish was making for `start` when its run died."""
        if start.message is None or head is None or head == start.head:
            return False
        try:
            commit = self.repo.commit(head)
            parents = [p.hexsha for p in commit.parents]
        except (ValueError, BadName, BadObject):  # not a commit we can read: not ours to keep
            return False
        return (parents == ([start.head] if start.head else [])
                and str(commit.message).rstrip("\n") == start.message.rstrip("\n"))

    def _record(self) -> Path:
        return Path(self.repo.git_dir) / OPEN_ATTEMPT

    def _remember(self, start: _Start, fresh: bool = False) -> None:
        """Write the record (temp file, rename). `fresh`: a task begins, and the record there
        is an earlier task's, which the runner has saved as settled, and no agent has run yet:
        the new one is written over it in one write, padded with spaces (JSON allows them) to
        the old one's length, since on ext4 replacing a file costs a flush to disk and making
        one a few hundred microseconds. Killed before that write, the next run finds the
        earlier task's record, which it keeps as it would have (the state says that task is
        done, this one not yet running); a write cut short (a full disk, a file size limit)
        raises before any agent runs, as writing a new file would have."""
        self._start = start
        record = self._record()
        # Its fields are plain values (asdict would copy them deeply first). ASCII: json
        # escapes the rest.
        text = json.dumps(vars(start)).encode()
        if fresh:
            fd = os.open(record, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                padded = text.ljust(os.fstat(fd).st_size)
                if os.pwrite(fd, padded, 0) != len(padded):
                    raise OSError(errno.ENOSPC, f"{record}: written in part (is the disk full?)")
            finally:
                os.close(fd)
            return
        record.with_suffix(".tmp").write_bytes(text)
        os.replace(record.with_suffix(".tmp"), record)

    def _forget(self) -> None:
        self._start = None
        self._record().unlink(missing_ok=True)

    def _settle(self, start: _Start) -> None:
        """The index after a task commit: its files as committed, the agent's others as before."""
        assert start.commit is not None
        self._reset_index(start.commit, set(start.files))
        self._reset_index(start.index_tree, set(start.touched))

    def _carry(self, start: _Start, sha: str, staged: frozenset[str]) -> None:
        """After a clean commit (only the task's paths were `staged`, the agent made no commits
        of its own) the next task's begin is known already: HEAD is the commit, the index its
        tree, and the paths the task left alone hold what they held at this begin."""
        if start.touched or not staged <= set(start.files):
            return
        states = {p: state for p, state in start.states.items() if p not in start.files}
        tree = self._tree(sha)
        self._next = (proc.started(), time.monotonic(),
                      _Start(sha, start.ref, tree, states, start.task))
        if not states:
            self._index_seen = index_seen(self.repo.git_dir)

    def _committed(self, start: _Start, sha: str, files: set[str]) -> Change:
        """The end of a finish that made commit `sha` of `files` for `start`, either way."""
        if self._sound == (start.ref, start.head):
            self._sound = (start.ref, sha)  # built on a history known whole: still whole
        # The record stays on disk until the next begin or close: a run killed before the
        # runner saved the task as done finds it there, and recovered() hands the commit over.
        self._start = None
        return Change(change_id=sha, commit_id=sha, base=start.head or "",
                      files=tuple(sorted(files)))

    def _carried(self) -> _Start | None:
        """The begin _carry foresaw, if nothing but agent-loop's own code ran since, and only
        for a moment: every agent, check and helper is a process, and a git command may have
        moved anything; a pause between tasks (--sleep) leaves the user time to edit. (Their
        edits in those few milliseconds count as the task's, as edits made while its agent
        works do.)"""
        carried, self._next = self._next, None
        if carried is None or carried[0] != proc.started() or \
                time.monotonic() - carried[1] > CARRY_SECONDS:
            return None
        start = carried[2]
        return start if self._where() == (start.ref, start.head) else None

    def _started(self) -> _Start:
        if self._start is None:
            raise VcsError("no task change is open: begin() was not called")
        return self._start

    def _roll_back_leftover(self) -> list[str]:
        """An earlier run died inside a task: keep the commit it made, else undo its edits."""
        stopped = "an earlier run stopped inside a task"
        try:
            text = self._record().read_text()
        except FileNotFoundError:
            return []
        try:
            leftover = _Start(**json.loads(text))
        except (ValueError, TypeError):
            self._forget()
            return [f"{stopped}, but its record could not be read; its files are left as they are"]
        self._start = leftover
        head = self._head()
        if leftover.commit is None and self._ours(leftover, head):
            leftover = dataclasses.replace(leftover, commit=head)  # died before noting the sha
        if leftover.commit is not None and head == leftover.commit:
            # It died after finish moved HEAD to the task's commit, before the runner saved the
            # task as done. Rolling back would throw finished work away and committing again
            # would make a second commit for the task: keep the commit and settle the index as
            # finish would have. The runner begins the task again and finds its work done.
            self._settle(leftover)
            # The record stays until the next begin or close: killed again before the runner
            # has saved the task, the run after still finds the commit.
            self._start = None
            files = leftover.files or sorted(_split(self._git(
                "diff-tree", "-r", "--root", "--name-only", "-z", "--no-renames",
                "--no-commit-id", head)))  # committed the short way: no list kept
            self._recovered = Change(change_id=head, commit_id=head, base=leftover.head or "",
                                     files=tuple(files))
            return [f"an earlier run stopped right after committing {head[:12]}; the commit "
                    "is kept"]
        if head != leftover.head:
            # Commits were made since; they may be the user's, so nothing is undone.
            self._forget()
            return [f"{stopped}; HEAD has moved since, so its files are left as they are"]
        if self._missing(leftover):
            self._forget()
            return [f"{stopped}, but the copies kept to roll it back are gone (git gc?); its "
                    "files are left as they are"]
        # Whatever the attempt left may be all there is of it, and the user's own edits since
        # the run died look just the same: no roll-back without a copy of what it undoes.
        try:
            saved = self._save_aside(leftover)
        except VcsError as exc:
            self._forget()
            return [f"{stopped}, and keeping a copy of its files failed ({exc}); they are left "
                    "as they are"]
        self.abandon(Change(change_id=""))
        note = "rolled back the unfinished task attempt an earlier run left behind"
        if saved:
            note += f"; its files are kept in commit {saved[:12]} (`git show {SAVED_REF}`)"
        return [note]

    def _save_aside(self, start: _Start) -> str | None:
        """Commit what a roll-back would undo under SAVED_REF; None when there is nothing."""
        changed = self._changed(start)
        sha = self._commit(start.head, changed, "agent-loop: an unfinished task attempt, "
                           "rolled back by the next run") if changed else None
        if sha is not None:
            self._git("update-ref", "--create-reflog", "-m", "agent-loop: rolled back",
                      SAVED_REF, sha)
        return sha
