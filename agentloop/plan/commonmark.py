"""marko's CommonMark parser as a plan's reading uses it: list items that know where they lie in
the text, and the parser's per-line work done with fewer calls. The syntax only, the same blocks
marko makes (tests/plan/test_commonmark.py holds the two to each other); what the blocks mean
for a plan is agentloop.plan.markdown's.
"""

from __future__ import annotations

import re
from re import Match, Pattern
from typing import cast

from marko import block
from marko.parser import Parser
from marko.source import Source


class SpannedListItem(block.ListItem):
    """A list item that remembers where it lies in the source (marko's own spans are for top
    level elements only)."""

    override = True
    span: tuple[int, int] = (0, 0)

    @classmethod
    def parse(cls, source: Source) -> block.ListItem:
        """marko's list item at `source`, with the span of text it took."""
        start = source.pos
        item = cast(SpannedListItem, super().parse(source))
        item.span = (start, source.pos)
        return item


class _LinkRefDef(block.LinkRefDef):
    """marko's `[label]: url` definition, found without a quadratic scan.

    marko's pattern runs a lazy match up to the next blank line only to find where the `[`
    is; a checklist of `- [ ]` items with no blank lines rescans the rest of the list at
    every item. Matching just the `[` gives the same start, and marko parses from there.
    """

    override = True
    pattern = re.compile(r" {,3}(\[)")


class _HTMLBlock(block.HTMLBlock):
    """marko's HTML block, its seven start conditions tried only on a line that opens with a
    `<` (every one of them starts so). marko tries the seven on every line of a plan, and
    compiling their patterns was a tenth of a run's regular expressions before its first agent
    (about 2 ms): a plan with no HTML never compiles them."""

    override = True

    @classmethod
    def match(cls, source: Source) -> int | bool:
        """marko's match, for a line that may open an HTML block."""
        if not source.expect_re(_HTML_START):
            source.context.html_end = None  # as marko's own leaves a line with none
            return False
        return super().match(source)


# marko's Source names its line patterns as strings, compiled again (a lookup in re's cache,
# three calls deep) at every one of the fifty-odd tests a plan line goes through.
_LINE = re.compile(r"(?m)[^\n]*$\n?")
_LINE_LAZY = re.compile(r"(?m)[^\n]*?$\n?")
_HTML_START = re.compile(r" {,3}<")
_COMPILED: dict[str, Pattern[str]] = {}


class _Source(Source):
    """marko's Source, doing the same work with fewer calls per line: its patterns compiled
    once, the next line matched without a detour through the general path. Parsing a plan is
    the one cost of a run that grows with the plan (the plan's reading, a third of our own work
    per task in a fresh run), and most of it is this class's."""

    @property
    def prefix(self) -> str:
        """The prefix of each line when parsing."""
        return "".join([s._prefix for s in self._states])  # type: ignore[attr-defined]

    def _expect_re(self, regexp: Pattern[str] | str, pos: int) -> Match[str] | None:
        if isinstance(regexp, str):
            compiled = _COMPILED.get(regexp)
            if compiled is None:
                compiled = _COMPILED[regexp] = re.compile(regexp)
            regexp = compiled
        return regexp.match(self._buffer, pos)

    def expect_re(self, regexp: Pattern[str] | str) -> Match[str] | None:
        """Test the rest of the line after the prefix against `regexp`; its match, or None."""
        line = _LINE.match(self._buffer, self.pos)
        self.match = line  # as next_line(require_prefix=False) leaves it
        prefix_len = self.match_prefix(self.prefix, line.group() if line else "")
        if prefix_len < 0:
            return None
        match = self._expect_re(regexp, self.pos + prefix_len)
        self.match = match
        return match

    def next_line(self, require_prefix: bool = True) -> str | None:  # type: ignore[override]
        """The next line: without its prefix (None when the prefix does not match), or
        whole (`require_prefix` False)."""
        if require_prefix:
            m = self.expect_re(_LINE_LAZY)
        else:
            m = _LINE.match(self._buffer, self.pos)
        self.match = m
        return m.group() if m else None


class PlanParser(Parser):
    """marko's CommonMark parser, with list items that know their source span and a quicker
    Source."""

    def __init__(self) -> None:
        super().__init__()
        self.add_element(SpannedListItem)
        self.add_element(_LinkRefDef)
        self.add_element(_HTMLBlock)

    def parse(self, text: str, inline: bool = True) -> block.Document:
        """The document `text` holds; `inline`: False parses the inline markup of headings
        only, the one inline text a plan's reading looks at (agentloop.plan.items.plain)."""
        source = _Source(text)
        source.parser = self
        doc = cast(block.Document, self.block_elements["Document"]())
        doc.source_span = (0, len(source._buffer))
        with source.under_state(doc):
            doc.children = self.parse_source(source)
            for node in doc.children if not inline else [doc]:
                if inline or isinstance(node, (block.Heading, block.SetextHeading)):
                    self.parse_inline(node, source)
        return doc
