"""Reading a plan's markdown as its author means it: which parts are tasks, which are notes,
context or check commands. General rules (docs/reference/task-file.md), no per-tool tricks:

- A file with at least one checkbox item, open or ticked, is a checklist: its checkbox items
  are the tasks, its plain bullets are notes, never run. Otherwise every top-level item is a
  task. (Ticked boxes count: a checklist whose last box was ticked still reads as a checklist,
  and its notes never turn into work.)
- A bullet that explains a bracket (`- [P] tasks = …`) or opens with one in a section about the
  file (Notes, Legend, Format) is a note (agentloop.plan.legend).
- An item numbered under the task before it (`1.1` after `1.`) is part of that task, as if it
  were indented under it (agentloop.plan.numbering).
- A sub-task marked optional (Kiro's `- [ ]* 1.2`, nested or numbered under a task that is not
  optional itself) is a task of its own, optional, right after its task: never in that task's
  text, so its agent sees it only when asked (--include-optional).
- A ticked task of Kiro's outline with a sub-task still open (`- [x] 2.` over `- [ ] 2.1`) is to
  do, and said: the work under it is not done, whoever ticked the box above it. (Open sub-items
  under a task ticked by hand in other plans are notes: the tick stands.)
- A heading `Task N…` (level 2 or deeper) starts a task section: one task, the heading and
  everything under it up to the next heading of the same or a higher level.
- In a checklist, paragraphs and fences after a task item, before the next item or heading,
  belong to that item; a bold-labelled paragraph (`**Checkpoint**: …`) is a note.
- The text before the first task's group or section is the plan's context.
- A code fence never closed runs to the end of the file (CommonMark): the tasks after it are
  code, and said so (agentloop.plan.fences).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import field
from typing import cast

from marko import block
from marko.element import Element

from agentloop.ondemand import dataclass_now as dataclass
from agentloop.plan import fences, numbering
from agentloop.plan.boxes import BOX_LINE, OPEN, TICKED, mark
from agentloop.plan.commonmark import PlanParser, SpannedListItem
from agentloop.plan.groups import UNGROUPED
from agentloop.plan.items import CHECKS_FENCE, check_lines, item_text, plain, sub_item_text
from agentloop.plan.legend import why_note

_TASK_HEADING = re.compile(r"task\s+\d+(?:\.\d+)*\b", re.IGNORECASE)
# A paragraph that opens with a bold label; compiled by `re` when first asked for (a plan
# with no such paragraph never does).
_LABEL = r"\*\*[^*\n]+\*\*\s*:|\*\*[^*\n]+:\*\*"
PLAIN_NOTE = "a plain bullet in a checklist: a note, not a task"
_BODY = (block.Paragraph, block.FencedCode, block.CodeBlock, block.Quote, block.HTMLBlock)


@dataclass
class Item:
    """A task as read: its group, first line number, text, and how its box was marked."""

    group: str
    line: int
    text: str
    marker: str | None      # None: no checkbox; else the box's character
    optional: bool = False  # Kiro's `[ ]*`
    steps: list[str] = field(default_factory=list)   # a task section's step markers
    parts: list[str] = field(default_factory=list)   # when sub-tasks were folded in: its own
    # text, then each sub-task's, as each reads on its own
    boxes: list[int] = field(default_factory=list)   # the lines of every box that is part of
    # it: its own, its nested items', its folded sub-tasks', a section's steps


@dataclass
class Reading:
    """Everything a plan holds besides tasks, and its tasks."""

    items: list[Item] = field(default_factory=list)
    ignored: list[tuple[int, str, str]] = field(default_factory=list)   # (line, text, why)
    warnings: list[str] = field(default_factory=list)
    folded: list[tuple[int, str, int]] = field(default_factory=list)   # (line, text, into line)
    checks: dict[str | None, list[str]] = field(default_factory=dict)
    context: str = ""
    title: str = ""                 # the plan's `#` heading, if it has one


class _Lines:
    """Line numbers of offsets, from the offsets of the line ends found once."""

    def __init__(self, text: str) -> None:
        self.ends = [m.start() for m in re.finditer("\n", text)]

    def of(self, offset: int) -> int:
        return bisect.bisect_left(self.ends, offset) + 1


def read(text: str) -> Reading:
    """The plan in `text` (LF line ends, no BOM)."""
    nodes = cast("list[block.BlockElement]",
                 list(PlanParser().parse(text, inline=False).children))
    boxes = _top_boxes(text, nodes)
    reading = _Walk(text, bool(boxes)).run(nodes)
    last = nodes[-1] if nodes else None
    # A fence never closed runs to the end of the file: the last block, if any.
    if isinstance(last, block.FencedCode) and last.source_span and \
            last.source_span[1] == len(text):
        start = last.source_span[0]
        hides = fences.unclosed(text[start:], text.count("\n", 0, start) + 1, bool(boxes))
        reading.warnings += [hides] if hides else []
    notes = sum(1 for _, _, why in reading.ignored if why == PLAIN_NOTE)
    if notes and not any(box in OPEN for box in boxes) and \
            not any(item.marker in OPEN for item in reading.items):
        # Read as a checklist that is done, not as a plain list with tasks ticked by hand:
        # the two look alike, and running notes would cost money, so it is said.
        reading.warnings.append(
            f"every box is ticked: read as a finished checklist, its {notes} plain bullet(s) "
            "are notes; write `- [ ]` before one to run it")
    return reading


def _top_boxes(text: str, nodes: list[block.BlockElement]) -> list[str]:
    """The boxes, open or ticked, of the top-level items, legends aside (`- [ ] = not
    started`): any makes the file a checklist."""
    headings: list[tuple[int, str]] = []
    found = []
    for node in nodes:
        if isinstance(node, (block.Heading, block.SetextHeading)):
            _under(headings, node)
        elif isinstance(node, block.List):
            for item in node.children:
                start, end = cast(SpannedListItem, item).span
                body, box, _ = item_text(text[start:end])
                if body and box in OPEN + TICKED and \
                        why_note(body, box, [w for _, w in headings]) is None:
                    found.append(box)
    return found


def _under(headings: list[tuple[int, str]], node: block.BlockElement) -> tuple[int, str]:
    """`node`, a heading, as (level, plain words), put on the stack of the headings above."""
    level = cast(int, getattr(node, "level", 1))
    while headings and headings[-1][0] >= level:
        headings.pop()
    headings.append((level, " ".join(plain(node.children).split())))
    return headings[-1]


class _Walk:
    """One pass over the top-level blocks, in order."""

    def __init__(self, text: str, checklist: bool) -> None:
        self.text, self.checklist, self.lines = text, checklist, _Lines(text)
        self.out = Reading()
        self.group, self.title, self.grouped = UNGROUPED, "", False
        self.group_start = 0             # where the current group's heading starts
        self.section: tuple[int, int, Item] | None = None   # (level, start, item)
        self.pieces: list[str] = []      # the open section's text
        self.last: Item | None = None    # the task item a left-margin body joins
        self.unit: tuple[str | None, Item] | None = None   # the last task, by its number
        self.headings: list[tuple[int, str]] = []          # the headings above, outermost first
        self.context_end: int | None = None
        self.cut: list[tuple[int, int]] = []   # check blocks: never context, never task text

    def run(self, nodes: list[block.BlockElement]) -> Reading:
        for node in nodes:
            start, end = node.source_span or (0, 0)
            if self.section is not None and not self._in_section(node, start, end):
                self._close()
            if self.section is None:
                self._node(node, start, end)
        self._close()
        self._opened()
        self._context()
        self.out.title = self.title
        return self.out

    def _opened(self) -> None:
        """A ticked task of Kiro's outline (`- [x] 2.`) with a sub-task still open under it
        (`- [ ] 2.1`) is to do: said, since the tick above says otherwise (a box ticked by hand
        over sub-tasks, a sub-task added after). Elsewhere the tick stands: open sub-items under
        a task ticked by hand are notes or later work, and running it would be paid."""
        lines: list[str] | None = None
        for item in self.out.items:
            if item.marker not in TICKED or not any(n != item.line for n in item.boxes):
                continue
            own = numbering.number(item.text.lstrip("* \t"))
            if own is None:
                continue   # not Kiro's outline: a hand-ticked task's open sub-items are notes
            lines = lines if lines is not None else self.text.split("\n")
            found = [n for n in item.boxes if n != item.line and _box(lines[n - 1]) in OPEN
                     and numbering.under(_numbered(lines[n - 1]) or "", own)]
            if found:
                item.marker = " "
                self.out.warnings.append(
                    f"line {item.line}: ticked, but its sub-task on line {found[0]} is open: "
                    "read as to do (tick the sub-task, or it runs with its task)")

    def _in_section(self, node: block.BlockElement, start: int, end: int) -> bool:
        level = self.section[0] if self.section else 0
        if isinstance(node, (block.Heading, block.SetextHeading)) and node.level <= level:
            return False
        if self._check_block(node, start, end):
            return True
        self.pieces.append(self.text[start:end])
        if isinstance(node, block.List) and self.section is not None:
            for step in node.children:
                s, e = cast(SpannedListItem, step).span
                self.section[2].steps.append(item_text(self.text[s:e])[1] or "")
                self.section[2].boxes.extend(self._boxes(step))
        return True

    def _close(self) -> None:
        if self.section is None:
            return
        item = self.section[2]
        item.text = "".join(self.pieces).strip("\n").rstrip()
        marks = [m for m in item.steps if m]
        if marks and all(m in TICKED for m in marks):
            item.marker = "x"   # every step ticked: the section is done
        self.out.items.append(item)
        self.section, self.pieces = None, []

    def _node(self, node: block.BlockElement, start: int, end: int) -> None:
        if isinstance(node, (block.Heading, block.SetextHeading)):
            self._heading(node, start, end)
        elif self._check_block(node, start, end):
            pass
        elif isinstance(node, block.List):
            self._list(node)
        elif isinstance(node, _BODY) and self.last is not None:
            self._body(node, start, end)
        elif isinstance(node, block.ThematicBreak):
            self.last = self.unit = None

    def _heading(self, node: block.BlockElement, start: int, end: int) -> None:
        self.last = self.unit = None
        level, words = _under(self.headings, node)
        if level >= 2 and _TASK_HEADING.match(words):
            group = self.group if self.grouped else (self.title or UNGROUPED)
            item = Item(group, self.lines.of(start), "", None)
            self._first_task(self.group_start if self.grouped else start)
            self.section, self.pieces = (level, start, item), [self.text[start:end]]
        elif level == 1:
            self.title = self.title or words
        elif level == 2:
            self.group, self.grouped, self.group_start = words or UNGROUPED, True, start

    def _check_block(self, node: block.BlockElement, start: int, end: int) -> bool:
        if not (isinstance(node, block.FencedCode) and node.lang == CHECKS_FENCE):
            return False
        self.out.checks.setdefault(self.group if self.grouped else None, []).extend(
            check_lines(node))
        self.cut.append((start, end))
        return True

    def _list(self, node: block.List) -> None:
        self.last = None
        for child in node.children:
            start, end = cast(SpannedListItem, child).span
            body, marker, optional = item_text(self.text[start:end])
            if not body:
                continue
            line = self.lines.of(start)
            if self._note(line, body, marker) or self._fold(line, body, optional, child):
                continue
            if marker is not None and marker not in OPEN + TICKED:
                self.out.warnings.append(f"line {line}: unknown box [{marker}]; read as to do")
            self._first_task(self.group_start if self.grouped else start)
            aside: list[SpannedListItem] | None = None if optional else []
            boxes = self._boxes(child, aside)
            if aside:
                body = item_text(self._cut(start, end, aside))[0]
            self.last = Item(self.group, line, body, marker, optional, boxes=boxes)
            self.out.items.append(self.last)
            self.unit = (numbering.number(body), self.last)
            for sub in aside or ():
                self._optional(sub)

    def _cut(self, start: int, end: int, aside: list[SpannedListItem]) -> str:
        """The text from `start` to `end` without the items in `aside`, which lie in it."""
        pieces, at = [], start
        for sub in aside:
            pieces.append(self.text[at:sub.span[0]])
            at = sub.span[1]
        return "".join(pieces) + self.text[at:end]

    def _optional(self, sub: SpannedListItem) -> Item:
        """An optional sub-task (nested under its task: `  - [ ]* 1.2 …`) as a task of its
        own, optional, after its task."""
        start, end = sub.span
        body, marker, _ = sub_item_text(self.text[start:end])
        item = Item(self.group, self.lines.of(start), body, marker, True,
                    boxes=self._boxes(sub))
        self.out.items.append(item)
        return item

    def _note(self, line: int, body: str, marker: str | None) -> bool:
        why = why_note(body, marker, [words for _, words in self.headings])
        if why is None and self.checklist and marker is None:
            why = PLAIN_NOTE
        if why is not None:
            self.out.ignored.append((line, _first(body if marker is None else
                                                  f"[{marker}] {body}"), why))
        return why is not None

    def _boxes(self, item: Element, aside: list[SpannedListItem] | None = None) -> list[int]:
        """The lines of the boxes of `item`, a list item, and of the items nested in its lists
        (the ones that make it done when it lands); with `aside`, the nested items marked
        optional go there instead, with their boxes (tasks of their own)."""
        spanned = cast(SpannedListItem, item)
        start, end = spanned.span
        first = self.text[start:end].split("\n", 1)[0]
        found = [self.lines.of(start)] if BOX_LINE.match(first) else []
        for child in spanned.children:
            if isinstance(child, block.List):
                for sub in cast("list[SpannedListItem]", child.children):
                    if aside is not None and self._starred(sub):
                        aside.append(sub)
                    else:
                        found += self._boxes(sub, aside)
        return found

    def _starred(self, sub: SpannedListItem) -> bool:
        """Whether a nested list item's box is marked optional (`[ ]*`)."""
        start, end = sub.span
        first = self.text[start:end].split("\n", 1)[0]
        return "]*" in first and sub_item_text(first)[2]

    def _fold(self, line: int, body: str, optional: bool, child: Element) -> bool:
        """A sub-task numbered under the task before it joins that task's text, written as it
        would be indented under it; an optional one under a task that is not is a task of its
        own (as nested, agentloop.plan.markdown's module doc)."""
        start, end = cast(SpannedListItem, child).span
        own, parent = numbering.number(body), self.unit[0] if self.unit else None
        if self.unit is None or own is None or parent is None or not numbering.under(own, parent):
            return False
        item = self.unit[1]
        if optional and not item.optional:
            self.last = self._optional(cast(SpannedListItem, child))
            return True
        item.parts = item.parts or [item.text]
        blank = self.text[max(0, start - 80):start].rstrip(" \t").endswith("\n\n")
        aside: list[SpannedListItem] | None = None if item.optional else []
        boxes = self._boxes(child, aside)
        source = self._cut(start, end, aside) if aside else self.text[start:end]
        item.text += ("\n\n" if blank else "\n") + source.rstrip()
        item.parts.append(item_text(source)[0] if aside else body)
        item.boxes.extend(boxes)
        for sub in aside or ():
            self._optional(sub)
        self.out.folded.append((line, _first(body), item.line))
        self.last = item
        return True

    def _body(self, node: block.BlockElement, start: int, end: int) -> None:
        source = self.text[start:end].rstrip()
        if not self.checklist or self.last is None or self.last.marker is None:
            return
        if isinstance(node, block.Paragraph) and re.match(_LABEL, source):
            self.out.ignored.append((self.lines.of(start), _first(source),
                                     "a labelled note after a checklist"))
            return
        self.last.text += "\n\n" + source

    def _first_task(self, boundary: int) -> None:
        if self.context_end is None:
            self.context_end = boundary

    def _context(self) -> None:
        end = self.context_end if self.context_end is not None else 0
        parts, at = [], 0
        for s, e in self.cut:
            if s < end:
                parts.append(self.text[at:s])
                at = e
        parts.append(self.text[at:end])
        text = "".join(parts).strip()
        # A title alone says nothing a task needs.
        self.out.context = "" if not text or re.fullmatch(r"#[^\n]*", text) else text


def _numbered(line: str) -> str | None:
    """The outline number a list item's line opens with after its box (`2.1` of `- [ ] 2.1 …`)."""
    found = BOX_LINE.match(line)
    return numbering.number(line[found.end():].lstrip("* \t")) if found else None


def _box(line: str) -> str | None:
    """The character in the box of a list item's first line, None when it has none."""
    found = BOX_LINE.match(line)
    return mark(found.group(2)) if found else None


def _first(text: str, limit: int = 80) -> str:
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
