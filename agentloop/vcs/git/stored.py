"""Whether git's object store holds an object, read off its files with no process: the object's
loose file, or its name in a pack's index (`.idx`, versions 1 and 2).

`--status` trusts the run's last look at the history (agentloop.vcs.history.unmoved) and starts
no process while the branch stands where that look found it; the commit it stands on can be
gone all the same (a `git gc --prune=now` beside the landing that made it), and then the
repository is damaged, to be said so (agentloop.vcs.git.pruned). A stat, and for a packed
commit a dozen small reads an index, say whether it is there.
"""

from __future__ import annotations

import os

V2 = b"\xfftOc"   # a version 2 index's first bytes; a version 1 index starts with its fan-out
FANOUT = 256 * 4


def holds(common_dir: str | os.PathLike[str], sha: str) -> bool | None:
    """Whether the object store of the repository whose common git dir is `common_dir` holds
    object `sha`; None when its files cannot tell (objects borrowed from another store, a
    SHA-256 repository, an index that cannot be read)."""
    objects = os.path.join(common_dir, "objects")
    if os.path.exists(os.path.join(objects, sha[:2], sha[2:])):
        return True
    if len(sha) != 40 or os.path.exists(os.path.join(objects, "info", "alternates")):
        return None
    packs = os.path.join(objects, "pack")
    try:
        indexes = [name for name in os.listdir(packs) if name.endswith(".idx")]
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        key = bytes.fromhex(sha)
    except ValueError:
        return None
    unknown = False
    for name in indexes:
        found = _indexed(os.path.join(packs, name), key)
        if found:
            return True
        unknown = unknown or found is None
    return None if unknown else False


def _indexed(path: str, key: bytes) -> bool | None:
    """Whether the pack index at `path` names object `key` (a binary search of its sorted
    names within the fan-out's range for the first byte); None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        head = os.pread(fd, 8, 0)
        if head[:4] == V2:
            if int.from_bytes(head[4:], "big") != 2:
                return None
            fanout, names, width = 8, 8 + FANOUT, 20
        else:  # version 1: each entry is a 4-byte offset, then the name
            fanout, names, width = 0, FANOUT + 4, 24
        fan = os.pread(fd, FANOUT, fanout)
        if len(fan) != FANOUT:
            return None
        first = key[0]
        low = int.from_bytes(fan[4 * first - 4:4 * first], "big") if first else 0
        high = int.from_bytes(fan[4 * first:4 * first + 4], "big")
        while low < high:
            middle = (low + high) // 2
            name = os.pread(fd, 20, names + middle * width)
            if len(name) != 20:
                return None
            if name == key:
                return True
            if name < key:
                low = middle + 1
            else:
                high = middle
        return False
    except OSError:
        return None
    finally:
        os.close(fd)
