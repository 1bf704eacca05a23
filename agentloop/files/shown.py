"""A file's name as a line shows it: whole on that line."""

from __future__ import annotations

import os


def shown(name: str | os.PathLike[str]) -> str:
    """The name as it is, or quoted (Python's repr) when it holds a newline or another
    control character, which would cut the line it is said in."""
    text = os.fspath(name)
    return text if text.isprintable() else repr(text)


def listed(names: list[str], most: int = 5) -> str:
    """The first `most` names, each shown, and how many more."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(shown(name) for name in names[:most]) + more
