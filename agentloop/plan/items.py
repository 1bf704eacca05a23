"""One list item or block of a plan as text: its marker and box stripped, indentation removed;
inline markdown as a reader sees it; the commands of a check block."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from marko import block, inline
from marko.element import Element

from agentloop.plan.boxes import mark

# The info string of a fenced block of check commands, one shell line each; `#` lines are notes.
CHECKS_FENCE = "agent-loop-checks"
_MARKER = re.compile(r" {0,3}(?:\d{1,9}[.)]|[-+*])")
# A box at the start of an item: `[ ]`, `[x]`, `[-]`, any one character or none (`[]`, read as
# `[ ]`: agentloop.plan.boxes.mark); Kiro's `[ ]*` is optional.
_CHECKBOX = re.compile(r"\[([^\]\n]?)\](\*)?(?:[ \t]+|$)")


def check_lines(node: block.FencedCode) -> list[str]:
    """The commands of a check block: its non-empty lines that are not `#` comments."""
    # A fence's text is literal: no entity decoding, `&&` and `<` stay as written.
    body = "".join(str(getattr(c, "children", "")) for c in node.children)
    return [ln.strip() for ln in body.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def plain(children: str | Sequence[Element]) -> str:
    """Inline markdown as the reader sees it: no markup, no HTML tags, entities decoded."""
    if isinstance(children, str):
        return children
    parts = []
    for child in children:
        if isinstance(child, inline.InlineHTML):
            continue
        text = plain(child.children)  # type: ignore[attr-defined]
        parts.append(html.unescape(text) if isinstance(child, inline.RawText) else text)
    return "".join(parts)


def item_text(source: str) -> tuple[str, str | None, bool]:
    """A list item's source without its marker, indentation and box; the box's character (None
    without one), and whether it is marked optional."""
    lines = source.split("\n")
    marker = _MARKER.match(lines[0])
    assert marker, "marko made a list item of a line without a list marker"
    after = lines[0][marker.end():]
    gap = _width(after[: len(after) - len(after.lstrip(" \t"))], marker.end())
    # CommonMark: content starts after 1-4 columns of space; more means indented code.
    indent = marker.end() + (gap if 1 <= gap <= 4 and after.strip(" \t") else 1)
    lines[0] = " " * marker.end() + after
    lines = [_dedent(line, indent) for line in lines]
    checkbox = _CHECKBOX.match(lines[0])
    if checkbox:
        lines[0] = lines[0][checkbox.end():]
    while lines and not lines[0].strip():
        lines.pop(0)
    box = mark(checkbox.group(1)) if checkbox else None
    return "\n".join(lines).rstrip(), box, bool(checkbox and checkbox.group(2))


def sub_item_text(source: str) -> tuple[str, str | None, bool]:
    """item_text of a list item nested in another, its source indented as it stands there."""
    lines = source.split("\n")
    blank = lines[0][: len(lines[0]) - len(lines[0].lstrip(" \t"))]
    width = _width(blank, 0)
    return item_text("\n".join(_dedent(line, width) for line in lines))


def _width(blank: str, column: int) -> int:
    """How many columns the spaces and tabs in `blank` span when they start at `column`."""
    end = column
    for char in blank:
        end = end + 4 - end % 4 if char == "\t" else end + 1
    return end - column


def _dedent(line: str, columns: int) -> str:
    """`line` without up to `columns` columns of leading spaces and tabs (tab stops of 4)."""
    column = 0
    for i, char in enumerate(line):
        if column >= columns or char not in " \t":
            return line[i:]
        step = 4 - column % 4 if char == "\t" else 1
        if column + step > columns:
            return " " * (column + step - columns) + line[i + 1:]
        column += step
    return ""


