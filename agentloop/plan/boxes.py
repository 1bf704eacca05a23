"""A list item's box (`- [ ]`, `- [x]`): which marks are to do and which done, where a box stands
on its line, and a task's text with the boxes of its sub-items read as open (what the task is,
whoever ticks them)."""

from __future__ import annotations

import re

OPEN = (" ", "-", "~", "/")      # a box to do; the last three say "in progress"
TICKED = ("x", "X")
# A list item's first line up to its box, at any depth: the indentation and marker, the space
# after it, `[`, and the box's character (a BOM may open the file's first line); none in an
# empty box (`- []`, the space left out in haste), which is an open one (`mark`).
_BOX = r"[ \t]*(?:\d{1,9}[.)]|[-+*])[ \t]+\[)([^\]\n\r]?)\](?=[ \t*]|$)"
BOX_LINE = re.compile("(\ufeff?" + _BOX)
_BOXES = re.compile("(?m)^(" + _BOX)


def mark(char: str) -> str:
    """A box's character as read: an empty box (`[]`) is an open one (`[ ]`)."""
    return char or " "


def task_key(text: str) -> str:
    """What a task's text says, whatever its line wrapping and the marks in the boxes of its
    sub-items and steps: ticking those (the agent, or the tick-boxes setting, when it lands)
    leaves the same task."""
    opened = _BOXES.sub(lambda m: m.group(1) + (" " if mark(m.group(2)) in OPEN + TICKED
                                                else m.group(2)) + "]", text)
    return " ".join(opened.split())
