"""The working-tree side of the git backend: a path's content as one string, and putting it back.

A state is "missing", "link:<target>", "other" (a folder, a fifo: nothing we record or recreate)
or "<mode>:<blob sha>". Paths are git's: relative, slash-separated, and a path git would not
reach (beyond a symlinked folder, outside the tree) is never read or written through.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop.files.digest import sha1

# GitPython's object stores come with the calls that use them: a clean tree's task needs none.
if TYPE_CHECKING:
    from git.db import GitCmdObjectDB, GitDB

MISSING = "missing"


def plain(rel: str) -> bool:
    """A relative path inside the working tree, as git names one; a record could hold others."""
    parts = rel.split("/")
    return not rel.startswith("/") and not any(p in ("", ".", "..", ".git") for p in parts)


def through_link(root: Path, rel: str) -> bool:
    """Whether a folder on the way to `rel` is a symlink: git sees no file there."""
    folder = root
    for part in rel.split("/")[:-1]:
        folder = folder / part
        if folder.is_symlink():
            return True
    return False


def state_of(root: Path, rel: str, keep_in: GitDB | GitCmdObjectDB | None = None) -> str:
    """A path's content as one string; with `keep_in` the bytes are stored there as a blob."""
    full = root / rel
    if through_link(root, rel):
        return MISSING
    try:
        st = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):  # the latter: a folder became a file
        return MISSING
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(full)
    if not stat.S_ISREG(st.st_mode):
        return "other"
    mode = "100755" if st.st_mode & 0o111 else "100644"
    with open(full, "rb") as f:  # streamed in chunks: memory stays flat whatever the file's size
        size = os.fstat(f.fileno()).st_size
        if keep_in is not None:
            from gitdb import IStream

            sha = keep_in.store(IStream("blob", size, f)).hexsha.decode()
        else:
            digest = sha1(b"blob %d\0" % size)
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
            sha = digest.hexdigest()
    return f"{mode}:{sha}"


def put_back(root: Path, rel: str, state: str, odb: GitDB | GitCmdObjectDB) -> None:
    """Make `rel` hold `state` again, deleting nothing that is not the attempt's to delete."""
    full = root / rel
    if state == "other" or through_link(root, rel):
        return  # nothing we can recreate; or a write that would land outside `rel`
    if full.is_dir() and not full.is_symlink():
        if any(full.iterdir()):
            return  # what is left in it (ignored files, a nested repo) is not the attempt's
        full.rmdir()
    elif full.exists() or full.is_symlink():
        full.unlink()
    if state == MISSING:
        # Folders the attempt created for its files go too; git does not keep empty ones.
        for parent in full.parents:
            if parent == root or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()
        return
    try:
        full.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        return  # a file the roll-back may not delete (an ignored one) holds the folder's place
    if state.startswith("link:"):
        os.symlink(state[len("link:"):], full)
    else:
        from gitdb.util import hex_to_bin

        mode, sha = state.split(":")
        full.write_bytes(odb.stream(hex_to_bin(sha)).read())
        os.chmod(full, 0o755 if mode == "100755" else 0o644)
