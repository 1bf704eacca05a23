"""Task files: markdown -> frozen Task records, parsed with marko's syntax tree.

The rules as a user reads them are in README.md, "The task file"; `--dry-run` applies them.
Check blocks (a fence whose info string is `agent-loop-checks`) are never tasks: one before the
first `##` applies to every task, one under a `##` to that group's tasks (agentloop.verify).
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from marko import block, inline
from marko.element import Element
from marko.parser import Parser
from marko.source import Source

from agentloop.errors import TaskFileError

UNGROUPED = "(ungrouped)"
SUMMARY_LIMIT = 60
GROUP_SLUG_LIMIT = 30
TASK_SLUG_LIMIT = 40
# A task reaches the agent as one command-line argument, which Linux caps at 128 KiB; the rest
# of that room is left for what a prompt adds to the task (learnings, retry notes, hints).
MAX_TASK_BYTES = 64 * 1024

# The info string of a fenced block of check commands, one shell line each; `#` lines are notes.
CHECKS_FENCE = "agent-loop-checks"
_MARKER = re.compile(r" {0,3}(?:\d{1,9}[.)]|[-+*])")
_CHECKBOX = re.compile(r"\[([ \txX])\](?:[ \t]+|$)")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Task:
    """One task: a list item under a `##` heading."""

    index: int          # 1-based over the whole file
    group: str          # the `##` heading's text, or UNGROUPED for tasks before the first heading
    text: str           # the item's markdown source as written, list marker (and [ ]/[x]) removed
    line: int           # 1-based source line of the list item
    summary: str        # first line of text, whitespace folded, cut to about 60 characters
    log_name: str       # "NNN-<group-slug>--<task-slug>" (no extension), ASCII, unique
    checked: bool       # written as `- [x]`: already done by the author's word, skipped
    checks: tuple[str, ...] = ()   # the plan's check commands for it: the file's, its group's


@dataclass(frozen=True)
class TaskFile:
    """A parsed task file."""

    path: Path
    sha256: str                 # "sha256:<hex>" of the file's bytes
    tasks: tuple[Task, ...]


def file_hash(data: bytes) -> str:
    """The hash recorded in the state: "sha256:" and the hex digest of the file's bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _SpannedListItem(block.ListItem):
    """A list item that remembers where it lies in the source.

    marko < 2.2.4 keeps no positions, and 2.2.4's `source_span` is too new to rely on, so we
    record `source.pos` around marko's own parse: on every 2.x the item starts at a line start.
    """

    override = True
    span: tuple[int, int] = (0, 0)

    @classmethod
    def parse(cls, source: Source) -> block.ListItem:
        start = source.pos
        item = cast(_SpannedListItem, super().parse(source))
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


class _Parser(Parser):
    """marko's CommonMark parser, with list items that know their source span."""

    def __init__(self) -> None:
        super().__init__()
        self.add_element(_SpannedListItem)
        self.add_element(_LinkRefDef)


def parse(text: str) -> tuple[Task, ...]:
    """The tasks in a task file's text, in file order (empty if there are none)."""
    # marko also turns CRLF and CR into LF; doing it first keeps its offsets equal to ours.
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    checks: dict[str | None, list[str]] = {}
    items = list(_items(text, checks))
    return tuple(replace(_task(index, *item),
                         checks=tuple(dict.fromkeys(checks.get(None, []) +
                                                    checks.get(item[0], []))))
                 for index, item in enumerate(items, 1))


def _items(text: str, checks: dict[str | None, list[str]]) -> Iterator[tuple[str, int, str, bool]]:
    """(group, line, text, checked) of each non-empty top-level list item; the check blocks go
    into `checks` (None: before the first group, for the whole file)."""
    group, line, counted_to, grouped = UNGROUPED, 1, 0, False
    for node in _Parser().parse(text).children:
        if isinstance(node, (block.Heading, block.SetextHeading)) and node.level == 2:
            group, grouped = " ".join(_plain(node.children).split()) or UNGROUPED, True
        elif isinstance(node, block.FencedCode) and node.lang == CHECKS_FENCE:
            checks.setdefault(group if grouped else None, []).extend(check_lines(node))
        elif isinstance(node, block.List):
            for item in node.children:
                start, end = cast(_SpannedListItem, item).span
                # Counting only the newlines since the last item keeps this linear.
                line += text.count("\n", counted_to, start)
                counted_to = start
                body, checked = _item_text(text[start:end])
                if body:
                    yield group, line, body, checked


def check_lines(node: block.FencedCode) -> list[str]:
    """The commands of a check block: its non-empty lines that are not `#` comments."""
    # A fence's text is literal: no entity decoding, `&&` and `<` stay as written.
    body = "".join(str(getattr(c, "children", "")) for c in node.children)
    return [ln.strip() for ln in body.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _plain(children: str | Sequence[Element]) -> str:
    """Inline markdown as the reader sees it: no markup, no HTML tags, entities decoded."""
    if isinstance(children, str):
        return children
    parts = []
    for child in children:
        if isinstance(child, inline.InlineHTML):
            continue
        text = _plain(child.children)  # type: ignore[attr-defined]
        parts.append(html.unescape(text) if isinstance(child, inline.RawText) else text)
    return "".join(parts)


def _item_text(source: str) -> tuple[str, bool]:
    """A list item's source without its marker, indentation and checkbox; and if it was ticked."""
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
    checked = checkbox is not None and checkbox.group(1) in "xX"
    return "\n".join(lines).rstrip(), checked


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


def _task(index: int, group: str, line: int, text: str, checked: bool) -> Task:
    """The Task for one item; its summary and log name come from its first line."""
    first = " ".join(next(part for part in text.split("\n") if part.strip()).split())
    group_slug = slug(group, GROUP_SLUG_LIMIT) or "group"
    task_slug = slug(first, TASK_SLUG_LIMIT) or "task"
    return Task(index=index, group=group, text=text, line=line, summary=_summary(first),
                log_name=f"{index:03d}-{group_slug}--{task_slug}", checked=checked)


def _summary(folded: str) -> str:
    """`folded` if it fits in SUMMARY_LIMIT characters, else cut at a space and ending in "…"."""
    if len(folded) <= SUMMARY_LIMIT:
        return folded
    cut = folded.rfind(" ", 0, SUMMARY_LIMIT)
    # A cut in the first half would lose too much: then cut the long word instead.
    if cut < SUMMARY_LIMIT // 2:
        cut = SUMMARY_LIMIT - 1
    return folded[:cut].rstrip() + "…"


def slug(text: str, limit: int) -> str:
    """`text` as at most `limit` characters of `[a-z0-9-]`, cut between words; "" if none left."""
    ascii_text = unicodedata.normalize("NFKD", text.casefold()).encode("ascii", "ignore")
    dashed = _NOT_SLUG.sub("-", ascii_text.decode("ascii").lower()).strip("-")
    if len(dashed) <= limit:
        return dashed
    cut = dashed.rfind("-", 0, limit + 1)
    return dashed[: cut if cut >= limit // 2 else limit].rstrip("-")


def load(path: Path) -> TaskFile:
    """Read, hash and parse the task file at `path`; TaskFileError if it is unusable."""
    return from_bytes(path, read_bytes(path))


def from_bytes(path: Path, data: bytes) -> TaskFile:
    """Hash and parse the task file's bytes, already read; TaskFileError if it is unusable."""
    tasks = parse(_decode(path, data))
    if not tasks:
        raise TaskFileError(f"task file {_shown(path)} has no tasks: "
                            "write each task as a list item, like `- fix the login bug`")
    for task in tasks:
        size = len(task.text.encode("utf-8"))
        if size > MAX_TASK_BYTES:
            raise TaskFileError(f"task {task.index} (line {task.line}) of {_shown(path)} is "
                                f"{size:,} bytes; a task can be at most {MAX_TASK_BYTES // 1024} "
                                "KiB (it goes to the agent as one command-line argument): put "
                                "the long part in a file and name that file in the task")
    return TaskFile(path=path, sha256=file_hash(data), tasks=tasks)


def read_bytes(path: Path) -> bytes:
    """The task file's raw bytes (for hashing); TaskFileError if missing, a folder, unreadable."""
    if path.is_dir():
        raise TaskFileError(f"task file {_shown(path)} is a directory, not a file")
    try:
        return path.read_bytes()
    except FileNotFoundError as e:
        raise TaskFileError(f"task file {_shown(path)} does not exist") from e
    except OSError as e:
        raise TaskFileError(f"cannot read task file {_shown(path)}: {e.strerror}") from e


def _decode(path: Path, data: bytes) -> str:
    """The file's text; TaskFileError if it is UTF-16, binary or not UTF-8."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TaskFileError(f"task file {_shown(path)} is UTF-16: save it as UTF-8")
    if b"\x00" in data:
        raise TaskFileError(f"task file {_shown(path)} is not text (it contains NUL bytes)")
    try:
        return data.decode("utf-8")  # parse() drops a BOM
    except UnicodeDecodeError as e:
        before = data[: e.start].decode("utf-8")
        line = before.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
        raise TaskFileError(f"task file {_shown(path)} is not UTF-8 text "
                            f"(byte 0x{data[e.start]:02x} on line {line})") from e


def _shown(path: Path) -> str:
    """The path for an error message, quoted if it holds a newline or other control character."""
    return str(path) if str(path).isprintable() else repr(str(path))
