"""A file's name as a line says it: as git quotes one (`"a\\nb.txt"`) when it holds a control
character, a double quote or a backslash, so a name never breaks a line in two and reads as in
`git status`; any other name (spaces, accents) is said as it is. In a command to paste, a name
is typed as bash takes it (`typed`)."""

from __future__ import annotations

import os

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
            "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _control(c: str) -> bool:
    # Past ASCII, what Python does not print (C1 controls such as NEL, the line and paragraph
    # separators) can break a line too: escaped as git escapes any such byte by default.
    return ord(c) < 0x20 or ord(c) == 0x7F or (ord(c) > 0x7F and not c.isprintable())


def _escaped(c: str) -> str:
    return _ESCAPES.get(c) or "".join(f"\\{b:03o}" for b in c.encode("utf-8", "surrogateescape"))


def shown(name: str | os.PathLike[str]) -> str:
    """`name` as one piece of a line: plain, or quoted and escaped as git does."""
    text = os.fspath(name)
    if not any(c in _ESCAPES or _control(c) for c in text):
        return text
    return '"' + "".join(_escaped(c) if c in _ESCAPES or _control(c) else c
                         for c in text) + '"'


def listed(names: list[str], most: int = 5) -> str:
    """The first `most` names, each shown, comma-separated, and how many more."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(shown(name) for name in names[:most]) + more


def typed(name: str | os.PathLike[str]) -> str:
    """`name` as bash takes it pasted, in a line: quoted, or, where a character of it would
    break the line (a newline), in bash's $'...' with that character escaped."""
    import shlex  # on a stop's path only: it compiles a pattern as it loads

    name = os.fspath(name)
    if not any(_control(c) for c in name):
        return shlex.quote(name)
    # Not a git glob pathspec (`:(glob)a?b`): `cd`, `rm`, `mv` and `git -C` take no pathspec,
    # and a `?` in a pathspec matches your `a_b` too. Each byte of a control character as
    # three octal digits (a digit after it is never read as part of it), or as git says it.
    return "$'" + "".join("\\" + c if c in "\\'" else _octal(c) if _control(c) else c
                          for c in name) + "'"


def typed_path(name: str | os.PathLike[str]) -> str:
    """A path as a command's argument, typed: `./` before a relative one that starts with a
    dash (`-dash.md`), which click, `rm` and git would read as options."""
    text = os.fspath(name)
    return typed("./" + text if text.startswith("-") else text)


def _octal(c: str) -> str:
    if c in "\a\b\t\n\v\f\r":
        return _ESCAPES[c]
    return "".join(f"\\{b:03o}" for b in c.encode("utf-8", "surrogateescape"))
