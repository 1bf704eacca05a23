"""Which file a program name runs, as execvp would find it along PATH: looked up once per PATH
(which tries every folder of it), and again once it did not run where it was found (moved or
removed: a reinstall). Both ways of starting a child use it: posix_spawn (agentloop.proc.spawn)
needs the file itself, and Popen, told it, skips its own search. Not shutil.which: shutil loads
the compressors for its archives as it loads (bz2, lzma: a millisecond), on every run's way to
its first agent.
"""

from __future__ import annotations

import os
from typing import Mapping

_found: dict[tuple[str, str], str] = {}


def find(name: str, path: str) -> str | None:
    """What a name runs, as execvp would find it (looked up once per PATH)."""
    if os.sep in name:
        return name
    key = (name, path)
    if key not in _found:
        found = which(name, path)
        if found is None:
            return None
        _found[key] = found
    return _found[key]


def which(name: str, path: str | None = None) -> str | None:
    """The file `name` runs along `path` (PATH's value; the environment's when None), as
    shutil.which finds it: a name with a folder in it as it is, if it runs; None when none."""
    if os.path.dirname(name):
        return name if _runs(name) else None
    folders = os.environ.get("PATH", os.defpath) if path is None else path
    if not folders:
        return None
    seen: set[str] = set()
    for folder in folders.split(os.pathsep):
        if folder not in seen:
            seen.add(folder)
            candidate = os.path.join(folder, name)
            if _runs(candidate):
                return candidate
    return None


def _runs(file: str) -> bool:
    return os.access(file, os.F_OK | os.X_OK) and not os.path.isdir(file)


def located(name: str, env: Mapping[str, str] | None) -> str | None:
    """The absolute path `name` runs as with `env`'s PATH (a name with a slash, or one found in
    a relative folder of PATH, runs as the child finds it from its own folder: None)."""
    environ = os.environ if env is None else env
    found = find(name, environ.get("PATH", os.defpath))
    return found if found is not None and os.sep not in name and os.path.isabs(found) else None


def forget(name: str, env: Mapping[str, str] | None) -> None:
    """`name` did not run where it was found (moved, removed): look it up again next time."""
    environ = os.environ if env is None else env
    _found.pop((name, environ.get("PATH", os.defpath)), None)


def dropped(name: str, path: str) -> bool:
    """Forget where `name` was found along `path`; whether it had been found there."""
    return _found.pop((name, path), None) is not None
