"""Whether a live process has a file open: how a lock file git or jj left behind (its process
killed) is told from one a running git holds (the run's preflight, a lane's locks, your
checkout's index lock at the run's end)."""

from __future__ import annotations

import os
from pathlib import Path


def by_a_process(path: Path) -> bool:
    """Whether a live process has `path` open (Linux: /proc); elsewhere, assume it does."""
    proc_dir = Path("/proc")
    if not (proc_dir / "self" / "fd").is_dir():
        return True
    target = str(path.resolve())
    for fd_dir in proc_dir.glob("[0-9]*/fd"):
        try:
            links = list(fd_dir.iterdir())
        except OSError:
            continue  # gone, or not ours to see
        for link in links:
            try:
                if os.readlink(link) == target:
                    return True
            except OSError:
                continue
    return False
