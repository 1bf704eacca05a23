"""A landed change's files and patch, read from the repository's VCS (read-only commands: no
snapshot of the working copy, nothing moved)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentloop import proc
from agentloop.errors import ProcessError

MAX_BYTES = 2 << 20        # a patch larger than this is cut, with a note
_ID = re.compile(r"[0-9a-z]{4,64}")


def patch(root: Path, vcs: str, change_id: str | None, commit_id: str | None) -> str:
    """The patch of a task's change (git: its commit; jj: its change), or why there is none."""
    if vcs == "git" or (vcs == "jj" and commit_id and (root / ".git").exists()):
        ident = commit_id or change_id
        argv = ["git", "show", "--stat", "--patch", "--format=commit %H%n%n%B", "--no-color",
                "--no-ext-diff", "--end-of-options", str(ident), "--"]
    elif vcs == "jj":
        ident = change_id
        argv = ["jj", "--no-pager", "--color=never", "--ignore-working-copy", "diff", "--git",
                "-r", str(ident)]
    else:
        return "no version control: the change has no diff to show"
    if not ident or not _ID.fullmatch(ident):
        return "this task has no change to show"
    try:
        done = proc.run(argv, cwd=root, check=False, timeout=30,
                        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "JJ_EDITOR": "false"})
    except ProcessError as exc:
        return f"cannot show the change: {exc}"
    if done.returncode != 0:
        return f"cannot show the change: {(done.stderr or done.stdout).strip()[:300]}"
    text = done.stdout
    if len(text) > MAX_BYTES:
        text = text[:MAX_BYTES] + f"\n… cut at {MAX_BYTES // 1024} KB: see `{' '.join(argv)}`\n"
    return text
