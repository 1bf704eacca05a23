"""A landed change's files and patch, read from the repository's VCS (read-only commands: no
snapshot of the working copy, nothing moved)."""

from __future__ import annotations

import re
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.state.whereabouts import git_commit
from agentloop.vcs.git.run import Git
from agentloop.vcs.jj.run import Jj

MAX_BYTES = 2 << 20        # a patch larger than this is cut, with a note
TIMEOUT = 30               # seconds: a page waits for no longer
_ID = re.compile(r"[0-9a-z]{4,64}")


def patch(root: Path, vcs: str, change_id: str | None, commit_id: str | None) -> str:
    """The patch of a task's change (git: its commit; jj: its change), or why there is none."""
    if vcs == "jj" and commit_id is None and git_commit(change_id):
        commit_id = change_id  # a git commit jj's repository lacks (whereabouts.jj_lacks)
    if vcs == "git" or (vcs == "jj" and commit_id and (root / ".git").exists()):
        tool, ident = "git", commit_id or change_id
        args = ["show", "--stat", "--patch", "--format=commit %H%n%n%B", "--no-color",
                "--no-ext-diff", "--end-of-options", str(ident), "--"]
    elif vcs == "jj":
        tool, ident = "jj", change_id
        args = ["--ignore-working-copy", "diff", "--git", "-r", str(ident)]
    else:
        return "no version control: the change has no diff to show"
    if not ident or not _ID.fullmatch(ident):
        return "this task has no change to show"
    try:   # read-only: no lock a user's own git would wait for, no snapshot of jj's copy
        done = (Git(root).run(*args, codes=None, timeout=TIMEOUT, env={"GIT_OPTIONAL_LOCKS": "0"})
                if tool == "git" else Jj(root).run(*args, codes=None, timeout=TIMEOUT))
    except VcsError as exc:
        return f"cannot show the change: {exc}"
    if done.returncode != 0:
        return f"cannot show the change: {(done.stderr or done.stdout).strip()[:300]}"
    text = done.stdout
    if len(text) > MAX_BYTES:
        text = (text[:MAX_BYTES] + f"\n… cut at {MAX_BYTES // 1024} KB: see "
                f"`{tool} {' '.join(args)}`\n")
    return text
