"""A folder's entries, read with one os.scandir: what a pathlib glob of one `*` in that folder
finds (hidden names too, in no order), without the pattern the glob compiles and the selectors
it builds, a tenth of a millisecond or so each on a run's way to its first agent."""

from __future__ import annotations

import os
from pathlib import Path


def names(folder: Path) -> list[str]:
    """The names in `folder`; none when it is not a folder (missing, a file) or unreadable."""
    try:
        with os.scandir(folder) as entries:
            return [entry.name for entry in entries]
    except OSError:
        return []


def folders(folder: Path) -> list[Path]:
    """The folders in `folder` (a link to one too); none when it is not a folder."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_dir():
                        found.append(folder / entry.name)
                except OSError:  # as a glob passes over an entry it cannot look at
                    continue
    except OSError:
        return []
    return found
