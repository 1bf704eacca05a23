"""Kiro's numbering, which says which item a sub-task belongs to when indentation does not:
`- [ ] 1.1 Create the table` at the left margin under `- [ ] 1. Set up storage` is part of task 1,
as it would be written indented under it."""

from __future__ import annotations

import re

# `1.`, `1`, `1.2`, `1.2.` at the start of an item's text, before a space.
_NUMBER = re.compile(r"(\d{1,4}(?:\.\d{1,4})*)\.?(?=[ \t]|$)")


def number(body: str) -> str | None:
    """The outline number an item's text opens with (`1.2` of `1.2 Write the client`)."""
    found = _NUMBER.match(body)
    return found.group(1) if found else None


def under(child: str, parent: str) -> bool:
    """Whether outline number `child` lies under `parent` (1.2 and 1.2.1 under 1; 10.1 not)."""
    return child.startswith(parent + ".")
