"""A code fence opened and never closed: CommonMark runs its block to the end of the file, so
every task written after it is code, never run, and nothing says so. The reading stands (it is
the syntax), but a person who forgot the closing fence did not mean it: when the lines it hides
look like tasks, the plan's reading says so (agentloop.plan.markdown), --dry-run shows it, and
a run says it on stderr before its first agent (`said_at_start`). Plain `re` only: a run that
reads its plan from the state never loads marko for this.
"""

from __future__ import annotations

import re

# Patterns as strings, compiled by `re` when first asked for: only a plan that ends in a fence
# ever asks.
_OPENER = r" {0,3}(`{3,}|~{3,})"
# Lines that look like a plan's own: a box item at any depth, a group or task heading (`##` and
# deeper; `# …` is a shell comment as often as a title), and a list item at the margin, which is
# a task in a plan without boxes.
_BOXED = r"[ \t]*(?:\d{1,9}[.)]|[-+*])[ \t]+\[[^\]\n]?\]"
_HEADING = r" {0,3}#{2,6}(?:[ \t]|$)"
_ITEM = r"(?:\d{1,9}[.)]|[-+*])[ \t]+\S"
# The warning's own words: how a run picks it out of the plan's warnings, saved with its state.
_SAID = "this code fence is never closed"


def unclosed(block: str, line: int, checklist: bool) -> str | None:
    """The warning for a top-level fenced block whose source is `block` (from its opening fence
    on, starting at `line`), if it runs to the end of the file unclosed over lines that look
    like tasks (plain list items count only in a plan without boxes: `checklist` False)."""
    lines = block.rstrip("\n").split("\n")
    opener = re.match(_OPENER, lines[0])
    if opener is None:
        return None
    fence = opener.group(1)
    if len(lines) > 1 and re.fullmatch(r" {0,3}" + re.escape(fence[0]) + "{" + str(len(fence))
                                       + r",}[ \t]*", lines[-1]):
        return None
    hidden = [n for n, text in enumerate(lines[1:], line + 1)
              if re.match(_BOXED, text) or re.match(_HEADING, text) or
              (not checklist and re.match(_ITEM, text))]
    if not hidden:
        return None
    return (f"line {line}: {_SAID} ({fence}), so it runs to the end of the file and hides "
            f"{len(hidden)} line(s) that look like tasks or headings (the first on line "
            f"{hidden[0]}), none of them run; close it with {fence} to run them")


def said_at_start(warnings: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The plan's warnings a run says on stderr before its first agent: unclosed fences."""
    return tuple(w for w in warnings if _SAID in w)
