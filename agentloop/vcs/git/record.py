"""The git backend's open-attempt record, written to the git dir (OPEN_ATTEMPT) until the task
has ended, so the next run can deal with an attempt whose run died (SIGKILL, power loss): `finish`
adds the commit's message (or, building the commit by hand, its sha) to it before HEAD moves, and
it stays until the next task begins. The next `prepare` then keeps a commit that landed (nothing
is committed twice, nothing finished is lost), and rolls back an attempt that never got that far,
after saving its files in a commit under SAVED_REF (agentloop.vcs.git.recover): a roll-back nobody
asked for must not be the only copy of anything."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
from dataclasses import field
from pathlib import Path

from agentloop import AGENT_REFLOG_ACTION
from agentloop.ondemand import dataclass_now as dataclass

# In the git dir while a task is open, so the next run can tell what became of an attempt whose
# run died: committed (the record names the commit), or to be rolled back.
OPEN_ATTEMPT = "agent-loop-attempt.json"


@dataclass(frozen=True)
class Start:
    """What the repository looked like when a task began: the open-attempt record."""

    head: str | None            # None: unborn branch
    ref: str | None             # the branch HEAD pointed to; None when detached
    index_tree: str             # the index as a tree, to restore what the user had staged
    states: dict[str, str]      # path -> state, for paths that differed from HEAD at begin
    task: str | None = None     # the task file then: spared even by a run with another one
    # Set by finish before it commits: a commit with this message on `head` is this task's,
    # should the run die before it could note the commit's sha.
    message: str | None = None
    # Set by finish once the commit object exists, before HEAD moves to it: what the index must
    # hold afterwards (`files` as committed, `touched` as at begin), so the next run can finish.
    commit: str | None = None
    files: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    # Set by finish before it moves HEAD back over the commits the agent made itself: where
    # they were, so a run killed before the task's commit exists puts them back, none left to
    # a reflog.
    agent_head: str | None = None
    # begin's message, which names the task whatever finish later writes in `message`: a
    # killed run's attempt goes on only when its own task begins again.
    begun_as: str | None = None
    # Other plans' task files and the run's own output file (`> run.log`), kept out of the
    # task by the run that began it: a killed run's next run, printing elsewhere, spares them
    # too (its roll-back took the killed run's log for the attempt's file).
    kept_out: list[str] = field(default_factory=list)
    # The mark the run that began the attempt gives its agents' git (agentloop.vcs.git.reflog):
    # a run that goes on from a killed run's attempt tells that run's agents' commits from
    # yours by it, each run having a mark of its own.
    mark: str = AGENT_REFLOG_ACTION


class AttemptRecord:
    """The record's file in one git dir."""

    def __init__(self, git_dir: Path) -> None:
        self.path = git_dir / OPEN_ATTEMPT

    def write(self, start: Start, fresh: bool = False) -> None:
        """Write the record (temp file, rename). `fresh`: a task begins, and the record there
        is an earlier task's, which the runner has saved as settled, and no agent has run yet:
        the new one is written over it in one write, padded with spaces (JSON allows them) to
        the old one's length, since on ext4 replacing a file costs a flush to disk and making
        one a few hundred microseconds. Killed before that write, the next run finds the
        earlier task's record, which it keeps as it would have (the state says that task is
        done, this one not yet running); a write cut short (a full disk, a file size limit)
        raises before any agent runs, as writing a new file would have."""
        # Its fields are plain values (asdict would copy them deeply first). ASCII: json
        # escapes the rest.
        text = json.dumps(vars(start)).encode()
        if fresh:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                padded = text.ljust(os.fstat(fd).st_size)
                if os.pwrite(fd, padded, 0) != len(padded):
                    raise OSError(errno.ENOSPC, f"{self.path}: written in part (is the disk full?)")
            finally:
                os.close(fd)
            return
        self.path.with_suffix(".tmp").write_bytes(text)
        os.replace(self.path.with_suffix(".tmp"), self.path)

    def read(self) -> Start | None:
        """The record an earlier run left, None when there is none; ValueError when it cannot
        be read."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        try:
            # A record older than the marks of its own each run has: its run's was this one.
            return Start(**{"mark": "agent-loop agent", **json.loads(text)})
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    def renamed(self, old: str, new: str) -> None:
        """The open attempt's branch, `old` (refs/heads/...), renamed `new`: the record says so,
        or a run taking up an older version's lane (agentloop.vcs.git.worktrees) would find its
        agent's commits on another branch than its attempt began on, and set them aside as no
        task's. A record that cannot be read is left as it is (its prepare says so)."""
        try:
            start = self.read()
        except ValueError:
            return
        if start is not None and start.ref == old:
            self.write(dataclasses.replace(start, ref=new))

    def forget(self) -> None:
        """The record gone: no attempt is open."""
        self.path.unlink(missing_ok=True)
