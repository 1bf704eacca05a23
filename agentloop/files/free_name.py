"""A name beside others for something kept aside: never over what is there already."""

from __future__ import annotations

import os
from pathlib import Path


def free_name(path: Path) -> Path:
    """`path`, or `path`-2, -3… when something is kept there already (a link that names
    nothing counts: moving onto it would replace it)."""
    n, candidate = 1, path
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate
