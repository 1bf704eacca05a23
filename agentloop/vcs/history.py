"""Whether finished tasks' changes are still in the history being built on: one git or jj
command for all of them, which changes nothing (jj: no snapshot of the working copy); and the
mark a run leaves in its state once it knows, so `--status` asks again only when the history
moved since.

A mark is where the history stood (git: the commit HEAD is at, on whichever branch, as a lane's
worktree and the checkout that lands it share their commits, after the branch the tasks land on;
jj: the operation) with a digest of the changes found in it. A commit's ancestors never change,
nor does what an operation saw below @: while the history stands at the mark, every change it
covered is still there, and no process needs to say so."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.files.digest import hexdigest

# typing for the checker only: --status imports this module, not typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable


def where(kind: str, root: Path, ref: str | None = None) -> str | None:
    """Where the history of the repository at `root` stands, read off its files (no process);
    None when that cannot be told so. git: HEAD's commit, or with `ref` (refs/heads/...) that
    branch's."""
    if kind == "jj":
        from agentloop.vcs.jj.run import op_head
        return op_head(root)
    if kind != "git":
        return None
    from agentloop.vcs.git import refs
    dirs = _git_dirs(root)
    if dirs is None:
        return None
    if ref is not None:
        return refs.branch_tip(dirs[1], ref) or None
    found = refs.where(*dirs)
    return None if found is None else found[1]


def elsewhere(root: Path, recorded: str | None) -> tuple[str, str | None] | None:
    """git: (the branch a mark names, the one HEAD names or None when detached) when your
    checkout stands neither on that branch nor at the marked commit (you switched away before
    the run's tasks landed there): their changes are to be looked for on that branch. None
    when it stands there, the mark names no branch, or the files cannot tell (no process)."""
    branch = marked_branch(recorded)
    dirs = _git_dirs(root) if branch else None
    if branch is None or dirs is None:
        return None
    from agentloop.vcs.git import refs
    found = refs.where(*dirs)
    if found is None or found[0] == branch or found[1] == (recorded or "").split()[1] or \
            not refs.branch_tip(dirs[1], branch):
        return None
    return branch, found[0]


# A linked worktree's git dir and common dir by its root, with the stamp of the `.git` file
# they were read from: a lane's history is looked at after every task, and where its dirs are
# changes only with that file. Should a stale entry ever name the wrong dirs, the mark it
# gives names another commit: `--status` then asks git, as without a mark.
_linked: dict[Path, tuple[tuple[int, int, int, int], Path, Path]] = {}


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """The git dir and the common dir of the repository or worktree at `root`."""
    from agentloop.vcs.git import refs
    git_dir = root / ".git"
    try:
        st = os.stat(git_dir)
    except OSError:
        return None
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    linked = not stat.S_ISDIR(st.st_mode)
    if linked:  # a linked worktree: its own folder, named in that file
        known = _linked.get(root)
        if known is not None and known[0] == stamp:
            return known[1], known[2]
        own = refs.worktree_git_dir(root)
        if own is None:
            return None
        git_dir = own
    try:
        common = git_dir / "commondir"
        common_dir = git_dir / common.read_text().strip() if common.is_file() else git_dir
    except OSError:
        return None
    if linked:
        _linked[root] = (stamp, git_dir, common_dir)
    return git_dir, common_dir


def grown_from(root: Path, at: str, since: tuple[set[str], ...],
               own: Iterable[str]) -> str | None:
    """git: the commit in one of `since` from which the history standing `at` grew by commits
    among `own` (the run's task commits) alone, read off their loose objects (no process);
    None when that cannot be told so (your commit among them, a merge, a packed object)."""
    dirs = _git_dirs(root)
    if dirs is None:
        return None
    from agentloop.vcs.git import refs

    own = set(own)
    steps = len(own)
    while not any(at in known for known in since):  # sets other lanes add to: not copied
        if at not in own or steps == 0:
            return None
        parent = refs.parent_of(dirs[1], at)
        if parent is None:
            return None
        at, steps = parent, steps - 1
    return at


def mark(at: str, change_ids: Iterable[str], branch: str | None = None) -> str:
    """The mark of `change_ids` known to be in the history standing `at`; git: `branch`, the
    one the tasks land on (refs/heads/...), named first, so `--status` from a checkout you
    switched away since still looks where they are (marked_branch)."""
    digest = hexdigest("\n".join(sorted(change_ids)).encode())[:16]
    return f"{branch} {at} {digest}" if branch else f"{at} {digest}"


def marked_branch(recorded: str | None) -> str | None:
    """The branch a git mark names (refs/heads/...), if it names one."""
    parts = (recorded or "").split()
    return parts[0] if len(parts) == 3 and parts[0].startswith("refs/heads/") else None


def unmoved(kind: str, root: Path, recorded: str | None, change_ids: Iterable[str],
            ref: str | None = None) -> bool:
    """Whether the history (git: HEAD's, or branch `ref`'s) still stands where `recorded` (a
    mark) says every one of `change_ids` was found: then none of them can be missing."""
    if not recorded:
        return False
    at = where(kind, root, ref)
    if at is None:
        return False
    now = mark(at, change_ids)
    # A git mark names the branch too ("<branch> <commit> <digest>"): only the commit and the
    # digest count, so a run's last lane and the checkout it landed in agree.
    if recorded != now and not (kind == "git" and recorded.split()[-2:] == now.split()):
        return False
    # Standing there, but on a commit git no longer holds (pruned beside the landing that
    # made it): not to be trusted; the history's read then finds the damage and says it.
    return kind != "git" or _held(root, at)


def _held(root: Path, commit: str) -> bool:
    """Whether git's object store still holds `commit` (True when its files cannot tell)."""
    dirs = _git_dirs(root)
    if dirs is None:
        return True
    # Loose, as a commit a run landed is until a gc packs it: one stat, and --status loads no
    # reader of pack indexes.
    if os.path.exists(os.path.join(dirs[1], "objects", commit[:2], commit[2:])):
        return True
    from agentloop.vcs.git.stored import holds

    return holds(dirs[1], commit) is not False


def missing(kind: str, root: Path, change_ids: Iterable[str],
            commits: dict[str, str] | None = None, rev: str = "HEAD") -> set[str]:
    """The ids among `change_ids` that are no longer in the history of `rev` (git: HEAD, or a
    branch) or below @ (jj); nothing when that cannot be told. jj: `commits` gets each
    change's commit id as the same look found it (a change you described or squashed into
    keeps its id, not its commit)."""
    change_ids = list(change_ids)
    if not change_ids or kind not in ("git", "jj"):
        return set()
    try:
        if kind == "git":
            from agentloop.vcs.git.run import Git
            out = Git(root).out("rev-list", rev)
        else:
            from agentloop.vcs.jj.run import Jj
            out = Jj(root).out("--ignore-working-copy", "log", "--no-graph", "-r", "::@", "-T",
                               'change_id ++ " " ++ commit_id ++ "\\n"')
    except VcsError:
        return set()
    if kind == "jj" and commits is not None:
        for line in out.splitlines():
            change, _, commit = line.partition(" ")
            if commit:
                commits[change] = commit
    seen = set(out.split())
    return {c for c in change_ids if c not in seen}
