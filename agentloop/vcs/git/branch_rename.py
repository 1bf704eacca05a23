"""git: your branch renamed (`git branch -m`) while a run lands its tasks on it.

`git branch -m` with the checkout on the branch leaves a line in HEAD's reflog, "Branch: renamed
<old> to <new>", and HEAD on the new name: the tasks follow it there. It deletes the old name
before it moves HEAD and writes that line, so a landing that reads in between finds the branch
gone: a rename ends within milliseconds, a deleted branch stays gone (RENAME_SETTLES).
"""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.git import refs
from agentloop.vcs.git.run import Git

# How long a branch found gone is looked for again before the run says so.
RENAME_SETTLES = 1.0


def renamed_to(git: Git, git_dir: Path, common_dir: Path, ref: str) -> str | None:
    """The branch (refs/heads/...) HEAD's reflog says `ref` was renamed to, when HEAD is on it
    now; None otherwise."""
    try:
        log = (git_dir / "logs" / "HEAD").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    said = f"\tBranch: renamed {ref} to "
    new = next((line.split(said, 1)[1].strip() for line in reversed(log.splitlines())
                if said in line), None)
    if new is None or not new.startswith("refs/heads/"):
        return None
    here = refs.where(git_dir, common_dir)
    head = here[0] if here is not None else git.code(
        "symbolic-ref", "-q", "HEAD", codes=(0, 1))[1].strip()
    return new if head == new else None
