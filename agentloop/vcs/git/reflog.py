"""git: what an agent's own git commands did in your checkout, told for sure by the reflog. The
agent's environment sets GIT_REFLOG_ACTION (agentloop.agents.environment) to this run's mark,
and git's commit, reset, checkout, switch, merge, rebase and cherry-pick write it at the head of
the entry they add to HEAD's reflog and the branch's ("agent-loop agent 1a2b3c4d: my subject");
agent-loop's own commands never carry it. A lane's agent works in a worktree of its own, whose
HEAD has a reflog of its own: an entry so marked in your checkout's HEAD log, or in your
branch's, is an agent's git command run there (`cd` out of its lane). Read from the files, from
where they ended as the step began: no process, a stat each when nothing was added.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from agentloop import AGENT_REFLOG_ACTION


class Entry(NamedTuple):
    """One reflog entry: the ref's value before and after, and git's message."""

    old: str
    new: str
    message: str


def logs(git_dir: Path, common_dir: Path, ref: str) -> tuple[Path, Path]:
    """The reflog files of a checkout's HEAD and of its branch `ref` (refs/heads/...)."""
    return git_dir / "logs" / "HEAD", common_dir / "logs" / ref


def ends(files: tuple[Path, ...]) -> tuple[int, ...]:
    """Where each file ends now (0 for one that is not there yet)."""
    return tuple(_size(f) for f in files)


def agents_since(file: Path, end: int) -> list[Entry]:
    """The entries an agent's git command added to `file` after byte `end`, oldest first. A
    file that shrank (git's `reflog expire`) tells nothing: none."""
    size = _size(file)
    if size <= end:
        return []
    try:
        with open(file, "rb") as f:
            f.seek(end)
            added = f.read(size - end)
    except OSError:
        return []
    found = []
    for line in added.decode("utf-8", "replace").splitlines():
        head, tab, message = line.partition("\t")
        parts = head.split(" ", 2)
        if tab and len(parts) == 3 and marked(message):
            found.append(Entry(parts[0], parts[1], message))
    return found


def marked(message: str, mark: str = AGENT_REFLOG_ACTION) -> bool:
    """Whether git wrote the reflog `message` for a command run with GIT_REFLOG_ACTION=`mark`
    (this run's agents' by default). git 2.39 writes the mark alone (checkout, switch), then
    ": " and the subject (commit, cherry-pick, revert; ":" alone for an empty one), ": updating
    HEAD" (reset, stash), ": Fast-forward" (merge), or " (start): checkout main" and the like
    (rebase's steps). The whole mark: another run's, which an agent-loop around this one hands
    its agents and so the shell this one started from, is not this run's."""
    return message.startswith(mark) and message[len(mark):len(mark) + 1] in ("", ":", " ")


def lanes_own(entries: list[Entry], lane: str) -> list[Entry]:
    """Of an agent's `entries`, all but those another lane's agents wrote (lane_mark): in a run
    of several lanes, an entry another lane's agent wrote falls in this lane's step too. One
    with the run's mark alone (an agent that worked in your checkout) is no other lane's."""
    return [e for e in entries if lane_of(e.message) in (None, lane)]


def lane_of(message: str) -> str | None:
    """The lane whose agent wrote a marked entry's `message` (lane_mark); None for an entry of
    an agent that worked in your checkout (the run's mark alone)."""
    rest = message[len(AGENT_REFLOG_ACTION):]
    if not rest.startswith(" ") or not marked(message):
        return None
    word = rest[1:].split(" ", 1)[0].split(":", 1)[0]
    return word if word and not word.startswith("(") else None  # "(start)": a rebase's step


def _size(file: Path) -> int:
    try:
        return os.stat(file).st_size
    except OSError:
        return 0
