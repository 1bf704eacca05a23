"""Repositories an agent made inside yours (`git init app`, `git clone`, an `npm create` that runs
`git init`): their files, as git would list them were their `.git` not there.

git lists such a folder as one entry (`? app/` in `git status`), never its files: a commit of the
task's paths left them in no commit, `git add` of the folder records a gitlink to a commit that
lives only in that folder (gone with a lane), and one with no commit yet fails `git add`
outright. Its files are found with git's own rules (every `.gitignore` on the way, the inner
repository's too), from a scratch index that holds one entry under each such folder: a folder
the index knows is one git walks into like any other. git never runs inside the agent's
repository (its config is the agent's to write: a filter set there would run as you).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from agentloop.vcs.git.run import Git

# An index entry under a folder, so that git walks into it: a name no one gives a file.
PROBE = "\x01agent-loop-probe"
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
# Repositories inside repositories inside… deeper than this are not followed.
DEPTH = 8


def files_in(git: Git, folders: Iterable[str], scratch_in: Path) -> tuple[set[str], set[str]]:
    """(the files under the nested repositories `folders`, those inside nested ones too; every
    repository folder met on the way, `folders` included), with git's ignore rules applied.
    `scratch_in`: where the scratch index may go (the repository's git dir)."""
    files: set[str] = set()
    found: set[str] = set()
    todo = {f.rstrip("/") for f in folders} - {""}
    with tempfile.TemporaryDirectory(dir=scratch_in) as scratch:
        own = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        for _depth in range(DEPTH):
            if not todo:
                break
            found |= todo
            git.out("update-index", "-z", "--index-info", env=own, input="".join(
                f"100644 {EMPTY_BLOB}\t{f}/{PROBE}\0" for f in sorted(todo)))
            out = git.out("ls-files", "-z", "--others", "--exclude-standard", "--",
                          *sorted(todo), env=own)
            todo = set()
            for path in out.split("\0"):
                if path.endswith("/"):
                    todo.add(path[:-1])   # a repository inside this one
                elif path:
                    files.add(path)
            todo -= found
    return files, found


def said(repos: set[str], root: Path, lane: bool) -> str:
    """The line that says what became of the repositories an agent made inside yours, whose
    files are in its task's commit: in a lane their `.git` goes with it; in your checkout it
    stays, unless agent-loop moved it aside (agentloop.vcs.submodule_gitdirs says where)."""
    names = ", ".join(f"{r}/" for r in sorted(repos)[:5]) + \
        (f" and {len(repos) - 5} more" if len(repos) > 5 else "")
    one = len(repos) == 1
    git_dirs = "its `.git`" if one else "their `.git` folders"
    if lane:
        where = f"{git_dirs} (the history made there) went with the lane"
    elif all(os.path.lexists(root / r / ".git") for r in repos):
        where = f"{git_dirs} {'stays' if one else 'stay'} where {'it is' if one else 'they are'}" \
            ", in no commit"
    else:
        where = "a `.git` agent-loop moved aside is named in its own line"
    return (f"{names}: {'a git repository' if one else 'git repositories'} the agent made "
            f"inside yours; {'its' if one else 'their'} files are in this task's commit as "
            f"plain files ({where})")
