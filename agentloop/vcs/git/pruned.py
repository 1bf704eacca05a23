"""git: a landing's own objects pruned under it, told apart from a damaged repository.

A landing writes a tree and a commit that no ref names until its branch moves. An agent's `git gc
--prune=now` (in its lane, which shares the repository's objects) deletes just such objects, and
the git command that needed one fails (agentloop.vcs.git.run says so in one of its lines, GONE).
A gc never deletes what a branch names; a repository whose own objects are gone is damaged,
which no run mends, and git's words are the same for it: what the branch or the lane's
commit names being there too tells the two apart (one `git cat-file --batch-check`, asked only
once something failed). A checkout whose own commit is gone (its files lost, or a gc that raced
the landing moving your branch to it) fails git's first look at it: said the same way.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from agentloop.errors import VcsError
from agentloop.vcs.git.run import GONE, Git


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
        if not any(line in str(exc) for line in GONE):
            raise
        raise VcsError(f"git objects this landing had just written were removed before it "
                       f"ended (a `git gc --prune=now`, an agent's in its lane say, deletes new "
                       f"objects nothing names yet): task commit {commit[:12]} is not landed and "
                       "stays on its lane's branch; run again to land it") from None
