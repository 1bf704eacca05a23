"""Whether finished tasks' changes are still in the history being built on: one git or jj
command for all of them, which changes nothing (jj: no snapshot of the working copy)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from agentloop.errors import VcsError


def missing(kind: str, root: Path, change_ids: Iterable[str]) -> set[str]:
    """The ids among `change_ids` that are no longer in HEAD's history (git) or below @ (jj);
    nothing when that cannot be told."""
    change_ids = list(change_ids)
    if not change_ids or kind not in ("git", "jj"):
        return set()
    try:
        if kind == "git":
            from agentloop.vcs.git.run import Git
            out = Git(root).out("rev-list", "HEAD")
        else:
            from agentloop.vcs.jj.run import Jj
            out = Jj(root).out("--ignore-working-copy", "log", "--no-graph", "-r", "::@", "-T",
                               'change_id ++ "\\n"')
    except VcsError:
        return set()
    seen = set(out.split())
    return {c for c in change_ids if c not in seen}
