"""os.environ as a plain mapping, copied once while it stays the same.

Copying os.environ decodes every name and value in Python, some microseconds each, and every
git process starts with a copy; comparing the bytes behind it with the ones last copied is one
comparison of two dicts in C. A change to os.environ (a test's, a library's) is a new copy.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

_held: tuple[dict[bytes, bytes], Mapping[str, str]] | None = None


def current() -> Mapping[str, str]:
    """os.environ as it is now, read-only: copy it (`{**current(), ...}`) to change it."""
    global _held
    raw = getattr(os.environ, "_data", None)  # the bytes behind it, where there are (POSIX)
    held = _held
    if held is not None and raw is not None and held[0] == raw:
        return held[1]
    copy = MappingProxyType(dict(os.environ))
    if isinstance(raw, dict):
        _held = (dict(raw), copy)
    return copy


def home_of(environ: Mapping[str, str] | None = None) -> Path:
    """The home folder a child runs with (HOME, as it will read it)."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or Path.home())
