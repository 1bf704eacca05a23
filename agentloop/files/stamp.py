"""A file's stamp: the few fields of its status that tell whether it is still the same file, or
unchanged, at the cost of one stat (the look before a read, or before a lock is taken again)."""

from __future__ import annotations

import os
from pathlib import Path


def stat_or_none(path: Path, follow_symlinks: bool = True) -> os.stat_result | None:
    """The file's status, whose fields make its stamp; None when there is none to read
    (missing, a path through a file, no permission)."""
    try:
        return os.stat(path, follow_symlinks=follow_symlinks)
    except OSError:
        return None


Stamp = tuple[int, int, int, int, int]


def stamp(path: Path) -> Stamp | None:
    """The file's stamp (device, inode, size, modification and change times): equal while it is
    the same file, unchanged; None when there is no status to read."""
    found = stat_or_none(path)
    if found is None:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns
