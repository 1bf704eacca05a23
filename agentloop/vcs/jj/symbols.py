"""A name as jj's revsets and filesets read it. Past letters, digits, `_` and `/` (and `.` or
`-` between them), jj reads a character of a name as an operator: `fix&go` is an intersection,
`x-` the parents of x, `me@home` a remote's bookmark, and even `jj bookmark set` parses its
name so. A string literal (`"fix&go"`) is the name itself, in every one of them."""

from __future__ import annotations

import re

from agentloop.files.shown import typed

_PLAIN = re.compile(r"[A-Za-z0-9_/]+(?:[.-][A-Za-z0-9_/]+)*")


def literal(text: str) -> str:
    """`text` as a jj string literal: in double quotes, a quote or a backslash escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def symbol(name: str) -> str:
    """A bookmark or workspace name as a revset takes it: as it is when jj reads it whole
    (`main`, `agent-loop/1-auth`), else a string literal."""
    return name if _PLAIN.fullmatch(name) else literal(name)


def typed_symbol(name: str) -> str:
    """`symbol(name)` as bash takes it pasted in a printed jj command: `'"fix&go"'`."""
    return typed(symbol(name))
