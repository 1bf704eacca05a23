"""A pid file, as the run lock's holder writes one: the pid in it, while that process lives."""

from __future__ import annotations

import os
from pathlib import Path


def live_pid(pid_path: Path) -> int | None:
    """The pid a pid file names, while that process lives (someone else's counts as alive)."""
    try:
        text = pid_path.read_text().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None
    try:
        os.kill(int(text), 0)
    except PermissionError:
        pass  # someone else's process: it lives
    except OSError:
        return None
    return int(text)
