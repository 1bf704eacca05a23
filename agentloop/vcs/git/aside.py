"""Keeping a copy before a roll-back: every edit an attempt's roll-back is about to undo (the
agent's, and the user's own made while it worked, which look just the same) is first committed
under SAVED_REF, one commit per roll-back, the ref's reflog keeping the earlier ones.

The commit's parent holds the files as the attempt found them (HEAD, with the user's uncommitted
edits of the paths concerned as they were at begin), so its diff is exactly what the roll-back
undoes and `git diff --binary <sha>~ <sha> | git apply` puts it back on the rolled-back files
(as printed: both halves name the checkout, and the diff is plain whatever the user's config,
so it brings back every file from any folder of the checkout).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop.errors import VcsError
from agentloop.files.shown import typed
from agentloop.vcs.git.files import MISSING
from agentloop.vcs.git.record import Start
from agentloop.vcs.git.repo import GitRepo
from agentloop.vcs.git.run import Git
from agentloop.vcs.rewritten import carried

if TYPE_CHECKING:
    from collections.abc import Iterable

# Where the files of every rolled-back attempt are kept; the reflog keeps earlier ones.
SAVED_REF = "refs/agent-loop/rolled-back"
# Two lanes rolling back at once race for the ref's lock; the loser tries again.
TRIES = 5
NO_SHA = "0" * 40


def keep(repo: GitRepo, start: Start, why: str) -> tuple[str, list[str]] | None:
    """Commit what rolling back `start` would undo under SAVED_REF: (the commit, its paths),
    or None when the roll-back would undo nothing. VcsError when no copy could be made."""
    changed = repo.changed(start)
    if not changed:
        return None
    base = _as_begun(repo, start, changed)
    sha = repo.commit(base, changed, f"agent-loop: {why}")
    if sha is None:
        return None
    _saved(repo.git, sha, why)
    return sha, sorted(changed)


def keep_commits(git: Git, head: str, tip: str, why: str) -> bool:
    """Before a lane's worktree goes from `head` to `tip`: when a commit of its own (in
    tip..head) holds a change that `tip` does not (by `git cherry`'s patch ids, or its files
    as it left them), `head` kept under SAVED_REF, all of them with it; whether it was.
    VcsError when it could not be."""
    out = git.out("cherry", tip, head)
    own = [line[2:] for line in out.splitlines() if line.startswith("+ ")]
    if all(carried(git, commit, tip) for commit in own):
        return False
    _saved(git, head, why)
    return True


def _saved(git: Git, sha: str, why: str) -> None:
    """SAVED_REF moved to `sha`, its reflog keeping where it was."""
    for attempt in range(TRIES):
        try:
            git.out("update-ref", "--create-reflog", "-m", f"agent-loop: {why}", SAVED_REF, sha)
            return
        except VcsError:
            if attempt == TRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))  # the other lane holds the lock for milliseconds


def keep_folder(common_dir: Path, folder: Path, base: str, why: str
                ) -> tuple[str, list[str]] | None:
    """What `folder` holds that commit `base` does not, committed on `base` under SAVED_REF,
    with the repository's git dir and an index of its own: nothing of the folder's own git
    dir is read or written (a lane whose `.git` its agent removed, or that it left on another
    branch). (the commit, its paths), or None when the folder holds nothing new."""
    import tempfile  # where used: off every run's way to its first agent

    git = Git(folder, git_dir=common_dir)
    with tempfile.TemporaryDirectory(dir=common_dir) as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), "GIT_WORK_TREE": str(folder)}
        git.out("read-tree", base, env=env)
        git.out("add", "-A", env=env)
        tree = git.out("write-tree", env=env).strip()
        paths = [p for p in git.out("diff-index", "--cached", "--name-only", "-z", base,
                                    env=env).split("\0") if p]
    if not paths:
        return None
    sha = git.out("commit-tree", tree, "-p", base, "-m", f"agent-loop: {why}").strip()
    _saved(git, sha, why)
    return sha, sorted(paths)


def brings(root: Path, sha: str) -> str:
    """The command a person pastes to put the files of kept commit `sha` back in checkout
    `root`: typed from any folder of it, whatever their git config says."""
    # From a subfolder, `git apply` skips every path outside it (and exits 0), and
    # diff.relative leaves them out of the diff; color.ui=always, a diff.external or
    # diff.noprefix (paths without the a/ and b/ that apply strips) make a diff git apply
    # cannot read.
    at = typed(root)
    return (f"git -C {at} diff --no-color --no-ext-diff --no-relative --src-prefix=a/ "
            f"--dst-prefix=b/ --binary {sha}~ {sha} | git -C {at} apply")


def said_finished(kept: tuple[str, list[str]], root: Path) -> str:
    """The line that says where a finished agent's work was kept, for the next run to land
    (bring_back reads the commit from it) and for a person to bring back by hand in `root`."""
    sha, files = kept
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return (f"its agent had finished: its work ({len(files)} file(s): {shown}) is kept in "
            f"commit {sha[:12]} ({SAVED_REF}), and the next run lands it without paying the "
            f"agent again (`{brings(root, sha[:12])}` brings it back by hand)")


def said(kept: tuple[str, list[str]], root: Path) -> str:
    """The one line that says what was set aside and how to bring it back in `root`."""
    sha, files = kept
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return (f"rolled back {len(files)} file(s) the attempt changed ({shown}); kept in "
            f"commit {sha[:12]} ({SAVED_REF}), `{brings(root, sha[:12])}` brings them back")


def way_back(line: str, root: Path) -> str:
    """A line that names the commit a roll-back kept (copy_named), with the command that
    brings its files back by hand in `root`."""
    named = re.search(_SAID, line)
    if named is None:
        return line
    sha = named.group(1)
    return f"{line}; `{brings(root, sha)}` brings them back"


def bring_back(repo: GitRepo, line: str) -> bool:
    """Apply the diff of the commit a line of `said` names onto the working tree, all of it or
    nothing (git apply's own rule): whether it went in."""
    named = re.search(_SAID, line)
    if named is None:
        return False
    sha = named.group(1)
    try:
        # Your diff.noprefix would leave out the a/ and b/ that apply strips: named here.
        patch = repo.git.out("diff", "--binary", "--no-color", "--no-ext-diff", "--src-prefix=a/",
                             "--dst-prefix=b/", f"{sha}~", sha)
        if not patch.strip():
            return False
        repo.git.out("apply", "--whitespace=nowarn", input=patch)
    except VcsError:
        return False
    return True


def copy_named(notes: Iterable[str]) -> str | None:
    """The first of `notes` that names a commit bring_back can take the files from."""
    return next((line for line in notes if re.search(_SAID, line) is not None), None)


_SAID = r"kept in commit ([0-9a-f]{7,64}) "   # compiled by `re` when first asked for


def _as_begun(repo: GitRepo, start: Start, paths: set[str]) -> str | None:
    """A commit of the files as the attempt found them, where they differed from HEAD then
    (the user's uncommitted edits); HEAD itself when none of `paths` did."""
    lines = []
    for rel in sorted(paths & set(start.states)):
        state = start.states[rel]
        if state == MISSING:
            lines.append(f"0 {NO_SHA}\t{rel}")
        elif state.startswith("100"):
            mode, blob = state.split(":", 1)
            lines.append(f"{mode} {blob}\t{rel}")
        # a symlink or a folder at begin: kept as HEAD has it, the diff shows the difference
    if not lines:
        return start.head
    import tempfile  # where used: off every run's way to its first agent

    with tempfile.TemporaryDirectory(dir=repo.repo.git_dir) as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        repo.git.out("read-tree", start.head or "--empty", env=env)
        repo.git.out("update-index", "-z", "--index-info",
                     input="".join(line + "\0" for line in lines), env=env)
        tree = repo.git.out("write-tree", env=env).strip()
    parents = ["-p", start.head] if start.head else []
    return repo.git.out("commit-tree", tree, *parents, "-m",
                        "agent-loop: the files as the rolled-back attempt found them").strip()
