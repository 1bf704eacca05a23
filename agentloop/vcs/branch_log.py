"""The history a run builds on, with every description: the current branch (git, `HEAD`) or the
ancestors of the working copy (jj, `::@`), oldest first, read by one command that changes
nothing. What the tasks' trailers say is read from it (agentloop.state.landed)."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop import proc
from agentloop.errors import ProcessError

_FIELD, _END = "\x00", "\x01"
# Every description that can name a task holds it (its subject, its trailers, a revert's quote
# of either): the rest of a long history is never read.
MARK = "agent-loop"


def branch_history(kind: str, root: Path) -> list[tuple[str, str, str]]:
    """(commit id, change id, description) of every commit whose description mentions
    agent-loop, oldest first; git's change id is its commit id. Empty when there is no history
    (an unborn branch) or it cannot be read."""
    if kind == "git":
        argv = ["git", "log", "--reverse", "--regexp-ignore-case", f"--grep={MARK}",
                "--format=%H%x00%H%x00%B%x01", "HEAD"]
    elif kind == "jj":
        argv = ["jj", "--no-pager", "--color=never", "--ignore-working-copy", "log", "--no-graph",
                "--reversed", "-r", f'::@ & description(glob-i:"*{MARK}*")', "-T",
                'commit_id ++ "\\x00" ++ change_id ++ "\\x00" ++ description ++ "\\x01"']
    else:
        return []
    try:
        done = proc.run(argv, cwd=root, check=False, timeout=120,
                        env={**os.environ, "JJ_EDITOR": "false"})
    except ProcessError:
        return []
    if done.returncode != 0:
        return []
    found = []
    for entry in done.stdout.split(_END):
        parts = entry.lstrip("\n").split(_FIELD)
        if len(parts) == 3 and parts[0]:
            found.append((parts[0], parts[1], parts[2]))
    return found
