"""A new file of our own beside the one it will replace, as tempfile.mkstemp makes one: an
unused random name, made with O_EXCL, readable by its owner only. Not tempfile itself:
tempfile loads shutil and random as it loads (and shutil the compressors for its archives,
~3 ms), on every run's way to its first agent, for the state's first save."""

from __future__ import annotations

import os
from pathlib import Path

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(
    os, "O_NOFOLLOW", 0)
_TRIES = 100   # as tempfile's: a name taken that often is no chance, something is wrong


def scratch(folder: Path, prefix: str, suffix: str = "", mode: int = 0o600
            ) -> tuple[int, str]:
    """A new file in `folder` named `prefix`, random letters, `suffix`: its open descriptor
    and its path (FileExistsError once every try found its name taken). `mode`, less the
    umask: 0o666 for a file the user may copy, whose copy takes its mode."""
    for _ in range(_TRIES):
        path = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, _FLAGS, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(17, "no free name for a scratch file", os.path.join(folder, prefix))
