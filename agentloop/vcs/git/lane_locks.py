"""The locks git keeps in a lane's own git dir (its index's, its HEAD's), left there by the
lane's agent (a `touch .git/index.lock`, a git command of its killed midway): every git command
of agent-loop's in the lane would fail on them. The lane is agent-loop's and its agent has
ended, so one that no live process holds open is stale and goes, said; one still held (a git
the agent left running) stops the step, named."""

from __future__ import annotations

from pathlib import Path

from agentloop.errors import VcsError
from agentloop.files import opened
from agentloop.files.shown import typed

NAMES = ("index.lock", "HEAD.lock")


def cleared(lane: Path, git_dir: Path | None) -> str | None:
    """The lane's stale locks removed; the line that says so, None when there was none (a look
    at two names: no process, no /proc walk unless a lock is there)."""
    if git_dir is None:
        return None
    removed = []
    for name in NAMES:
        lock = git_dir / name
        if not lock.is_file():
            continue
        if opened.by_a_process(lock):
            raise VcsError(f"{lock}, the lock of the lane {lane}, is held by a running process "
                           "its agent left (a git command of its?): stop it, or remove the lock "
                           f"with `rm {typed(lock)}` if nothing runs, then run agent-loop again")
        lock.unlink(missing_ok=True)
        removed.append(str(lock))
    if not removed:
        return None
    return (f"the agent left {' and '.join(removed)} in its lane {lane} (no process holds it): "
            "removed, so agent-loop's git goes on there")
