"""Whether finished tasks' changes are still in the history being built on: one git or jj
command for all of them, which changes nothing (jj: no snapshot of the working copy)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from agentloop import proc
from agentloop.errors import ProcessError


def missing(kind: str, root: Path, change_ids: Iterable[str]) -> set[str]:
    """The ids among `change_ids` that are no longer in HEAD's history (git) or below @ (jj);
    nothing when that cannot be told."""
    change_ids = list(change_ids)
    if not change_ids or kind not in ("git", "jj"):
        return set()
    argv = (["git", "rev-list", "HEAD"] if kind == "git" else
            ["jj", "--no-pager", "--color=never", "--ignore-working-copy", "log", "--no-graph",
             "-r", "::@", "-T", 'change_id ++ "\\n"'])
    try:
        done = proc.run(argv, cwd=root, check=False, timeout=60,
                        env={**os.environ, "JJ_EDITOR": "false"})
    except ProcessError:
        return set()
    if done.returncode != 0:
        return set()
    seen = set(done.stdout.split())
    return {c for c in change_ids if c not in seen}
