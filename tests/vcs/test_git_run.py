"""agentloop.vcs.git.run: the one error text of a failed git command, read from real git's words.

git says "bad object <sha>" (and "nonexistent object", "is not a valid object", "not something
we can merge") alike of an object a `git gc` removed and of a full sha it never had: a sha handed
to it (a record edited by hand, one from another clone, a mistyped one) is said as not in the
repository, never as objects a gc removed. An object git reached through another one (a tree's
blob, a commit's tree or parent, the commit a branch or HEAD names) is the missing-object line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.errors import VcsError
from agentloop.vcs.git.run import LOST, NOT_HERE, Git
from tests.support.repos import git, make_repo

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository of two commits: README.md, then b.txt."""
    root = make_repo(tmp_path / "repo", "git", {"README.md": "hello\n"})
    (root / "b.txt").write_text("b\n")
    git(root, "add", "b.txt")
    git(root, "commit", "-qm", "b")
    return root


def said(root: Path, *args: str) -> str:
    """The error agent-loop's door makes of `git ARGS` failing in `root`."""
    with pytest.raises(VcsError) as caught:
        Git(root).out(*args)
    return str(caught.value)


def loose(root: Path, sha: str) -> None:
    """Object `sha` deleted from the store, as a prune or a damaged disk leaves it (every object
    unpacked first: a fresh repository's are loose already)."""
    path = root / ".git" / "objects" / sha[:2] / sha[2:]
    assert path.exists(), sha
    path.unlink()


def pruned_commit(root: Path) -> str:
    """A commit that was in the repository and that a `git gc --prune=now` removed."""
    git(root, "switch", "-q", "-c", "gone")
    (root / "c.txt").write_text("c\n")
    git(root, "add", "c.txt")
    git(root, "commit", "-qm", "c")
    sha = git(root, "rev-parse", "HEAD").strip()
    git(root, "switch", "-q", "main")
    git(root, "branch", "-q", "-D", "gone")
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    assert git(root, "cat-file", "-t", "HEAD") == "commit\n"
    return sha


HANDED = {
    # git 2.39's words for a full sha it does not have, handed to it
    "diff-tree": ("diff-tree", "-r", "HEAD", "{sha}"),              # bad object <sha>
    "log": ("log", "--format=%H", "{sha}"),                          # bad object <sha>
    "show": ("show", "{sha}"),                                       # bad object <sha>
    "diff --cached": ("diff", "--cached", "--quiet", "{sha}"),       # bad object <sha>
    "update-ref": ("update-ref", "refs/heads/other", "{sha}"),       # nonexistent object <sha>
    "commit-tree": ("commit-tree", "{sha}", "-m", "x"),              # <sha> is not a valid object
    "merge": ("merge", "--ff-only", "{sha}"),                        # <sha> - not something we ...
    "merge-tree": ("merge-tree", "--write-tree", "HEAD", "{sha}"),   # <sha> - not something we ...
    "cat-file": ("cat-file", "commit", "{sha}"),                     # cat-file <sha>: bad file
}


@pytest.mark.parametrize("how", sorted(HANDED))
@pytest.mark.parametrize("which", ["unknown", "pruned"])
def test_a_sha_git_was_handed_and_does_not_have_is_not_said_as_objects_a_gc_removed(
        repo: Path, how: str, which: str) -> None:
    sha = UNKNOWN if which == "unknown" else pruned_commit(repo)
    text = said(repo, *(a.format(sha=sha) for a in HANDED[how]))
    assert LOST not in text and "gc" not in text and "fsck" not in text, text
    assert f"given {sha[:12]}, which {NOT_HERE}" in text, text
    assert "fatal" not in text and "\n" not in text, text


def test_a_blob_a_damaged_index_names_is_the_missing_object_line(repo: Path) -> None:
    loose(repo, git(repo, "rev-parse", "HEAD:README.md").strip())
    (repo / "new.txt").write_text("new\n")
    git(repo, "add", "new.txt")   # the index's tree is built again, README.md's blob read
    text = said(repo, "write-tree")
    assert LOST in text and "git gc" in text and "git fsck" in text, text
    assert "invalid object" not in text and "error building trees" not in text, text


def test_a_tree_a_commit_names_is_the_missing_object_line(repo: Path) -> None:
    loose(repo, git(repo, "rev-parse", "HEAD^{tree}").strip())
    text = said(repo, "diff-tree", "HEAD^", "HEAD")     # unable to read tree <sha>
    assert LOST in text and NOT_HERE not in text, text


def test_a_commit_head_names_is_the_missing_object_line(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    loose(repo, head)
    for args in (("log", "HEAD"), ("rev-list", "main"), ("update-ref", "refs/heads/x", "HEAD")):
        text = said(repo, *args)   # bad object HEAD / main; nonexistent object <head>
        assert LOST in text and NOT_HERE not in text, (args, text)


def test_a_parent_commit_gone_is_the_missing_object_line(repo: Path) -> None:
    loose(repo, git(repo, "rev-parse", "HEAD^").strip())
    text = said(repo, "rev-list", "HEAD")   # Could not read <parent>; revision walk failed
    assert LOST in text and NOT_HERE not in text, text


def test_a_sha_git_was_handed_that_is_there_is_said_in_gits_words(repo: Path) -> None:
    # A file's sha where a commit belongs (a record edited by hand): git says "unable to read
    # tree <sha>" of it, as of a tree a gc removed; it is there, so git's words stand.
    blob = git(repo, "rev-parse", "HEAD:README.md").strip()
    text = said(repo, "diff-tree", "HEAD", blob)
    assert LOST not in text and NOT_HERE not in text, text
    assert f"unable to read tree {blob}" in text, text


@pytest.mark.parametrize("backend", ["git", "jj"])
def test_a_folder_removed_from_outside_is_said_so_by_either_backend(tmp_path: Path,
                                                                    backend: str) -> None:
    # Whatever the command said, a folder that is no longer there is the cause a user can act
    # on: both backends say it in the same words.
    from agentloop.vcs.git import run as git_run
    from agentloop.vcs.jj import run as jj_run

    gone = tmp_path / "lane"
    failure = git_run.failure if backend == "git" else jj_run.failure
    said = str(failure(gone, ("status",), "fatal: cannot change to it"))
    assert said == (f"{gone} is gone (removed from outside while agent-loop was using it); run "
                    "agent-loop again to set it up afresh")
