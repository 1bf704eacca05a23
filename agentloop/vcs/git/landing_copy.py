"""git: the main line's copy of a lane's task commit, made in memory beside your checkout.

`git merge-tree --write-tree` merges the task commit's own change with the main line, and `git
commit-tree` makes the copy on it: same tree change, author, date and message. Nothing here moves
a branch or touches a checkout (agentloop.vcs.git.mainline does, once the copy is made).
"""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.git.run import EMPTY_TREE, Git
from agentloop.vcs.landing import IntegrationConflict


def replay(root: Path, old: str, commit: str, whole: bool = False) -> tuple[str, list[str]]:
    """The main line's copy of `commit` on `old`: the change the task commit makes against
    its own parent, three-way merged with the main line. Never the lane's history since it
    branched off: that would replay the group's earlier tasks again, undoing a user's revert
    of one of them and conflicting on lines other groups changed since."""
    git = Git(root)
    out = git.code("rev-parse", "--verify", "-q", f"{commit}^", codes=(0, 1))[1]
    parent = out.strip() or None
    if whole:
        code, out = git.code("merge-tree", "--write-tree", "--name-only", "--no-messages",
                             old, commit, codes=(0, 1))
        tree = _merged(code, out, commit, old)
    elif parent == old:
        tree = git.code("rev-parse", f"{commit}^{{tree}}")[1].strip()
    else:
        tree = _merge(git, old, commit, parent)
    new = copy_commit(root, commit, tree, old)
    return new, changed_files(root, old, new)


def _merge(git: Git, old: str, commit: str, parent: str | None) -> str:
    """The tree of `old` with `commit`'s own change merged in. git 2.39 has no `merge-tree
    --merge-base`: the parent's tree becomes a root commit of its own, and the two sides
    are made its children, so it is the one merge base `merge-tree --write-tree` finds."""
    trees = git.code("rev-parse", f"{old}^{{tree}}", f"{commit}^{{tree}}",
                     f"{parent}^{{tree}}" if parent else EMPTY_TREE)[1].split()
    def made(tree: str, *parents: str) -> str:
        argv = ["commit-tree", tree, *(a for p in parents for a in ("-p", p))]
        return git.code(*argv, input="agent-loop: landing\n")[1].strip()
    base = made(trees[2])
    code, out = git.code("merge-tree", "--write-tree", "--name-only", "--no-messages",
                         made(trees[0], base), made(trees[1], base), codes=(0, 1))
    return _merged(code, out, commit, old)


def _merged(code: int, out: str, commit: str, old: str) -> str:
    """The tree `merge-tree --write-tree` made; IntegrationConflict when it conflicted."""
    lines = out.splitlines()
    if code == 1:
        raise IntegrationConflict(commit, tuple(dict.fromkeys(f for f in lines[1:] if f)),
                                  old)
    return lines[0].strip()


def copy_commit(root: Path, commit: str, tree: str, parent: str) -> str:
    """A commit of `tree` on `parent` with `commit`'s author, date and message, byte for byte."""
    git = Git(root)
    raw = git.code("cat-file", "commit", commit)[1]
    head, _, message = raw.partition("\n\n")
    author = next(line for line in head.splitlines() if line.startswith("author "))
    who, _, when = author[len("author "):].rpartition("> ")
    name, _, email = who.partition(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when}
    return git.code("commit-tree", tree, "-p", parent, input=message, env=env)[1].strip()


def changed_files(root: Path, old: str, new: str) -> list[str]:
    """The paths that differ between two commits."""
    out = Git(root).code("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", old, new)[1]
    return [f for f in out.split("\0") if f]
