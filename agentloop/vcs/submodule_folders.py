"""Which folders of a repository are its submodules, read as cheaply as can be.

`.gitmodules` names most (a file read, no process; read again only when it changed). A folder
holding a repository of its own that was `git add`ed (a gitlink, an "embedded repository") is
one too though no `.gitmodules` names it: only an index that holds a gitlink's mode somewhere
pays a `git ls-tree` to find those. What an agent writes inside them is agentloop.vcs.submodules.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.errors import AgentLoopError
from agentloop.vcs.git.run import Git

# The submodules named in a .gitmodules, by the file's path, with the stamp they were read at.
_named: dict[Path, tuple[tuple[int, int], tuple[str, ...]]] = {}
# Your checkout's submodules that .gitmodules does not name, found once (checkout_unlisted).
_unlisted_in: dict[Path, tuple[str, ...]] = {}


def paths(root: Path) -> tuple[str, ...]:
    """The submodule paths `root/.gitmodules` names; () without one. Read again only when the
    file changed."""
    file = root / ".gitmodules"
    try:
        st = file.stat()
    except OSError:
        return ()
    stamp = (st.st_mtime_ns, st.st_size)
    known = _named.get(file)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        text = file.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return ()
    found = tuple(dict.fromkeys(_parse(text)))
    _named[file] = (stamp, found)
    return found


def _parse(text: str) -> list[str]:
    """The `path` values of the `[submodule "…"]` sections of a git config text."""
    out, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            inside = line[1:].lstrip().lower().startswith("submodule")
            continue
        key, eq, value = line.partition("=")
        if not inside or not eq or key.strip().lower() != "path":
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        value = value.strip("/")
        # A path leaving the repository, or the repository itself, is none of a lane's
        # submodule folders.
        if value and not value.startswith("/") and not {".", ".."} & set(value.split("/")):
            out.append(value)
    return out


def own_dir(lane: Path) -> Path | None:
    """The lane's own VCS folder: its jj workspace's `.jj/`, or the folder in the repository
    that its git worktree's `.git` file names; None when neither is found."""
    jj = lane / ".jj"
    if jj.is_dir():
        return jj
    try:
        text = (lane / ".git").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:  # none, or a folder: a lane is a linked worktree, whose .git is a file
        return None
    if not text.startswith("gitdir:"):
        return None
    own = lane / text[len("gitdir:"):].strip()  # an absolute path stays as it is
    return own if own.is_dir() else None


# A git index entry's mode, as the index stores it (32 bits, big-endian): a gitlink's.
_GITLINK_MODE = (0o160000).to_bytes(4, "big")


def _holds_gitlink(git_dir: Path) -> bool:
    """Whether the index of `git_dir` may hold a gitlink (a false yes costs one process).
    A split index (core.splitIndex) keeps most entries in a shared index beside it, which its
    `link` extension names: those are searched too, a `link` found anywhere in the bytes
    being reason enough to look."""
    try:
        with open(git_dir / "index", "rb") as index:
            data = index.read()
    except OSError:
        return False
    if _GITLINK_MODE in data:
        return True
    if b"link" not in data:
        return False
    # The shared index lives in the repository's common folder too when this is a worktree's.
    folders = {git_dir}
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        folders.add((git_dir / common).resolve())
    except OSError:
        pass
    for folder in folders:
        try:
            names = [n for n in os.listdir(folder) if n.startswith("sharedindex.")]
        except OSError:
            continue
        for name in names:
            try:
                with open(folder / name, "rb") as index:
                    if _GITLINK_MODE in index.read():
                        return True
            except OSError:
                return True  # unreadable: look the careful way
    return False


def unlisted(lane: Path, own: Path | None) -> tuple[str, ...]:
    """The git lane's submodules that `.gitmodules` does not name: a folder holding a
    repository of its own that was `git add`ed (a gitlink, "embedded repository"), which a
    lane holds empty and git ignores the files of, as a submodule's. Only an index holding a
    gitlink's mode somewhere pays a process (`git ls-tree -d`: folders, no files); most
    indexes do not, which one search of its bytes tells."""
    if own is not None and own.name == ".jj":
        own, lane = _colocated(own)
    if own is None:
        return ()
    if not _holds_gitlink(own):
        return ()
    try:
        out = Git(lane).out("ls-tree", "-r", "-d", "-z", "--full-tree", "HEAD", codes=(0, 128))
    except AgentLoopError:
        return ()
    listed = set(paths(lane))
    found = []
    for entry in out.split("\0"):
        head, tab, path = entry.partition("\t")
        if tab and head.startswith("160000 ") and path not in listed:
            found.append(path)
    return tuple(found)


def _colocated(jj: Path) -> tuple[Path | None, Path]:
    """A jj lane keeps no git index: the git dir and folder of the repository its workspace
    belongs to, when that one is colocated (its `.git` a folder beside its `.jj`), whose
    index and HEAD tell the gitlinks instead; (None, the lane) otherwise."""
    try:  # a workspace's .jj/repo is a file naming the repository's, from .jj/
        main = (jj / (jj / "repo").read_text(encoding="utf-8").strip()).resolve().parent.parent
    except OSError:  # a folder: the repository's own workspace
        main = jj.parent
    return (main / ".git" if (main / ".git").is_dir() else None), main


def checkout_unlisted(root: Path) -> tuple[str, ...]:
    """Your checkout's submodules `.gitmodules` does not name (unlisted), found once a run:
    a look a task pays no second read of the index for."""
    if root not in _unlisted_in:
        own = root / ".git" if (root / ".git").is_dir() else own_dir(root)
        _unlisted_in[root] = unlisted(root, own)
    return _unlisted_in[root]
