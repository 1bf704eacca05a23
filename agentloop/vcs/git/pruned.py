"""git: a landing's own objects pruned under it, told apart from a damaged repository.

A landing writes a tree and a commit that no ref names until its branch moves. An agent's `git gc
--prune=now` (in its lane, which shares the repository's objects) deletes just such objects, and
git then says "bad object", "is not a valid object" or "nonexistent object". git says the same of
a repository whose own objects are damaged, which no run mends: what the branch or the lane's
commit names being there too tells the two apart (one `git cat-file --batch-check`, asked only
once something failed). A checkout whose own commit is gone (such a prune beside a run: the
landing's commit was on your branch already) fails git's first look at it: said the same way.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from agentloop.errors import VcsError
from agentloop.vcs.git.run import LOST, Git

# What git says of an object it was handed and no longer has (`commit-tree`, `update-ref`).
GONE = ("is not a valid object", "nonexistent object", "bad object", "unable to read tree",
        "could not parse commit", LOST)


def missing(git: Git, *revs: str) -> list[str]:
    """Which of `revs` (each a commit, read down to its tree) git's object store lacks."""
    asked = "".join(f"{rev}^{{tree}}\n" for rev in revs)
    out = git.code("cat-file", "--batch-check=%(objectname)", input=asked, codes=(0, 128))[1]
    return [rev for rev, line in zip(revs, out.splitlines()) if line.endswith(" missing")]


def damaged(lacking: list[str], kind: str = "commit") -> VcsError:
    """The one line for a repository that lacks what its own branch, checkout or lane commit
    names: no landing's doing, and running again does not help. `kind`: what a sha in
    `lacking` is (jj names a missing tree or file as such)."""
    first = lacking[0]
    what = (f"branch {first.removeprefix('refs/heads/')}" if first.startswith("refs/heads/")
            else "your checkout's commit" if first == "HEAD" else f"{kind} {first[:12]}")
    return VcsError(f"this repository's git objects are damaged ({what}, or its files, are "
                    "missing): nothing lands until it is repaired; `git fsck` says what is "
                    "missing (a fresh clone, or the objects copied back from one, mends it)")


def checkout_damaged(git: Git, ref: str | None, head: str | None) -> VcsError | None:
    """The damaged repository's line when the commit HEAD names (`head`, on branch `ref`) is
    missing; None when it is there, or HEAD names none (an unborn branch). Asked only once a
    command in the checkout failed, so git's own "bad object HEAD" is not what the user reads."""
    if head is None or not missing(git, head):
        return None
    return damaged([ref or "HEAD"])


@contextlib.contextmanager
def objects_kept(git: Git, ref: str, commit: str) -> Iterator[None]:
    """A landing of lane commit `commit` onto branch `ref` whose git objects, written a moment
    before and named by no ref yet, were deleted under it: said in one line, git's own error
    left out. The commit stays on its lane's branch and the run's record says it is landing:
    the next run lands it first. Objects the branch or the lane commit name missing too are a
    damaged repository, said so."""
    try:
        yield
    except VcsError as exc:
        if type(exc) is not VcsError:
            raise  # a conflict, say: git read what it needed
        lacking = missing(git, ref, commit)
        if lacking:
            raise damaged(lacking) from None
        if not any(words in str(exc) for words in GONE):
            raise
        raise VcsError(f"git objects this landing had just written were removed before it "
                       f"ended (a `git gc --prune=now`, an agent's in its lane say, deletes new "
                       f"objects nothing names yet): task commit {commit[:12]} is not landed and "
                       "stays on its lane's branch; run again to land it") from None
