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
