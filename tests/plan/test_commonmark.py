"""The plan's CommonMark parser (agentloop.plan.commonmark): marko's blocks, with list items
that know their source spans, read with fewer calls per line."""

from __future__ import annotations

import re
from typing import cast

import marko
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marko.block import List

from agentloop.plan import commonmark, markdown
from agentloop.plan.commonmark import PlanParser, SpannedListItem
from tests.plan.test_parse import LINES, MARKDOWNISH


@settings(max_examples=200, deadline=None, database=None)
@given(st.one_of(MARKDOWNISH, LINES))
def test_our_parser_reads_markdown_exactly_as_marko_does(text: str) -> None:
    # The list item and link definition overrides must change speed and bookkeeping only.
    assert marko.Markdown(parser=PlanParser).convert(text) == marko.Markdown().convert(text)


@pytest.mark.skipif(not hasattr(marko.block.ListItem, "source_span"),
                    reason="this marko keeps no source spans to compare with")
def test_item_spans_agree_with_markos_own_source_span() -> None:
    text = "- a\n  b\nlazy\n\n- c\n\n\n1. d\n   ```\n   - e\n   ```\n\n* f\n  > g\n\n-\n  h\n- \n"
    items = [cast(SpannedListItem, item) for node in PlanParser().parse(text).children
             if isinstance(node, List) for item in node.children]
    assert len(items) == 6
    assert [item.span for item in items] == [item.source_span for item in items]


def test_reading_a_plan_compiles_no_pattern_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # marko names its line patterns as strings: compiled (found in re's cache) at every test of
    # every line, the most of the calls a plan's reading made.
    markdown.read("## G\n- [ ] a\n")  # patterns used once and for all
    calls = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda *a, **k: calls.append(a) or real(*a, **k))
    markdown.read("## Group\n" + "".join(f"- [ ] task {i}\n" for i in range(50)))
    assert len(calls) < 10


@pytest.mark.parametrize("text", [
    "<script>\nx\n</script>\n", "<!-- a note -->\n", "<?php x ?>\n", "<!DOCTYPE html>\n",
    "<![CDATA[ x ]]>\n", "<DIV>\nx\n\ny\n", "<a href=\"u\">\ntext\n", "</pre>\n", "   <div>\n",
    "    <div>\n", "a paragraph\n<div>\n", "a paragraph\n<a>\n", "- item\n  <div>x</div>\n",
    "> <!--\n> x -->\n", "x < y\n", "<\n", " <x\n",
])
def test_html_blocks_read_exactly_as_marko_reads_them(text: str) -> None:
    assert marko.Markdown(parser=PlanParser).convert(text) == marko.Markdown().convert(text)


def test_a_plan_with_no_html_compiles_no_pattern_of_html_blocks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # marko tries an HTML block's seven start conditions on every line, each a pattern to
    # compile at a run's start (two of them long): only a line that opens with `<` needs them.
    monkeypatch.setattr(commonmark, "_COMPILED", {})
    markdown.read("# Plan\nSome context.\n\n## Group\n- [ ] a task\n  its second line\n"
                  "- [ ] b task\n\n```sh\nmake\n```\n> a quote\n")
    assert commonmark._COMPILED, "are marko's string patterns still compiled here?"
    assert not [p for p in commonmark._COMPILED if "<" in p]
