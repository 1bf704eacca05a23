"""A file's name as a line says it: as git quotes one (`"a\\nb.txt"`) when it holds a control
character, a double quote or a backslash, so a name never breaks a line in two; any other name
(spaces, accents) is said as it is."""

from __future__ import annotations

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
            "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def said(name: str) -> str:
    """`name` as one piece of a line: plain, or quoted and escaped as git does."""
    if not any(c in _ESCAPES or ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return name
    return '"' + "".join(_ESCAPES.get(c) or (f"\\{ord(c):03o}" if ord(c) < 0x20 or ord(c) == 0x7F
                                             else c) for c in name) + '"'


def said_all(names: list[str]) -> str:
    """`names` said one by one, comma-separated."""
    return ", ".join(said(n) for n in names)
