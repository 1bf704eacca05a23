"""git refused for an index lock (`.git/index.lock`) another process holds: a git of yours
beside the run (a `git add`, an editor's git panel refreshing), which holds it for a moment.
agent-loop's git door (agentloop.vcs.git.run) waits briefly for it to go and runs the command
again, where it would stop the run or leave your checkout behind its branch for a moment's
lock. A lock nobody holds (a killed git's, an agent's `touch`) is no git at work: no wait, and
what each caller does with a lock then (agentloop.vcs.git.behind, the preflight) holds.

Loaded only once a git command has failed: a plain run never does."""

from __future__ import annotations

import re
import time
from pathlib import Path

# How long a lock of a git at work is waited for: a git of yours holds it for milliseconds.
BRIEF_SECONDS = 3.0
POLL_SECONDS = 0.02
# The lock git names in its error, in any language: the path in git's quotes, which may hold a
# space (`~/My Project`), else the word that ends in it.
_QUOTED = re.compile(r"""(?:'|‘|“|«\s?)([^'’”»\n]*index\.lock)(?:'|’|”|\s?»)""")
_LOCK = re.compile(r"""([^\s'"‘’“”«»]*index\.lock)""")


def _named(error: str) -> Path | None:
    """The lock file `error` names, or None."""
    found = _QUOTED.search(error) or _LOCK.search(error)
    return Path(found.group(1)) if found is not None else None


def gone(error: str) -> bool | None:
    """Whether the index lock git refused for (named in `error`) was held by a process at work
    and went within BRIEF_SECONDS, waited for here, leaving HEAD and its branch where they were:
    then the command may run again. None when the git that held it moved them meanwhile (your
    `git switch`, `commit`, `reset`): the command stays refused, for run again it would act on
    what that git moved to (a landing's `merge --ff-only` would take the task onto the branch
    you switched to); `moved` says so."""
    lock = _named(error)
    if lock is None:
        return False
    from agentloop.files import opened

    if not lock.is_absolute() or not lock.exists():
        return lock.is_absolute()  # gone already: try again at once
    if not opened.by_a_process(lock):
        return False  # a leftover: waiting would not make it go
    before = _head(lock.parent)
    until = time.monotonic() + BRIEF_SECONDS
    while lock.exists():
        if time.monotonic() >= until:
            return False
        time.sleep(POLL_SECONDS)
    return True if before is not None and _head(lock.parent) == before else None


def moved(error: str) -> str:
    """What to say of a git command refused for an index lock whose git moved HEAD or its
    branch while it held it (`gone` gave None): not run again, and what to do."""
    lock = _named(error)
    return (f"{lock} was held by another git process of yours, which moved HEAD or its branch "
            "meanwhile (a `git switch`, `commit` or `reset`), so the command was not run again "
            "on what it moved to: run agent-loop again once your git is done")


def _head(git_dir: Path) -> tuple[str | None, str | None] | None:
    """The branch HEAD names in `git_dir` and its commit, as the files say; None when they do
    not tell (agentloop.vcs.git.refs.where)."""
    from agentloop.vcs.git import refs

    try:  # a linked checkout's git dir names the repository's own
        common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        common = git_dir
    return refs.where(git_dir, common)


def stayed(error: str) -> str | None:
    """What to say of a git command refused for an index lock still there (waited for, or
    nobody's): the file and what to do; None when `error` names no lock that is there."""
    lock = _named(error)
    if lock is None or not lock.is_absolute() or not lock.exists():
        return None
    from agentloop.files.shown import typed

    return (f"{lock} is held by another git process (a git of yours still at work, or one "
            "that crashed): let it finish, or if no git runs, remove it "
            f"(`rm {typed(str(lock))}`); then run agent-loop again")
