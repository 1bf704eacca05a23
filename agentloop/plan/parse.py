"""Task files: markdown -> frozen Task records, parsed with marko's syntax tree.

The rules as a user reads them are in docs/reference/task-file.md; `--dry-run` applies them.
Check blocks (a fence whose info string is `agent-loop-checks`) are never tasks: one before the
first `##` applies to every task, one under a `##` to that group's tasks (agentloop.verify).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.errors import TaskFileError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.plan.boxes import TICKED

# What tells a changed plan from the one the state holds, without parsing it; the names
# readers of plans have always taken from here.
from agentloop.plan.source import Read as Read
from agentloop.plan.source import file_hash, read_bytes, shown, slug
from agentloop.plan.source import read as read

if TYPE_CHECKING:
    from agentloop.plan.markdown import Reading

# The markdown reader (marko) is imported when a file is parsed, not with this module: a plan
# whose hash the state already holds is never parsed (agentloop.state.project), and --status
# of it should not pay for marko. Names readers of plans take from here come on first use.
_FROM_MARKDOWN = ("UNGROUPED", "Reading", "read")

SUMMARY_LIMIT = 60
GROUP_SLUG_LIMIT = 30
TASK_SLUG_LIMIT = 40
# A task goes to the agent on stdin, so no argv limit applies; a megabyte of task text is a plan
# that belongs in a file of its own.
MAX_TASK_BYTES = 1024 * 1024




@dataclass(frozen=True)
class Task:
    """One task: a list item under a `##` heading."""

    index: int          # 1-based over the whole file
    group: str          # its group's name (agentloop.plan.groups): the `##` heading, suffixed if it repeats
    text: str           # the item's markdown source as written, list marker (and [ ]/[x]) removed
    line: int           # 1-based source line of the list item
    summary: str        # first line of text, whitespace folded, cut to about 60 characters
    log_name: str       # "NNN-<group-slug>--<task-slug>" (no extension), ASCII, unique
    checked: bool       # written as `- [x]`: already done by the author's word, skipped
    checks: tuple[str, ...] = ()   # the plan's check commands for it: the file's, its group's
    optional: bool = False         # Kiro's `- [ ]*`: run only when asked (--include-optional)
    # Sub-tasks folded in by their numbers: its own text, then each sub-task's as it reads on
    # its own (so records saved before the folding find their task again); () if none.
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskFile:
    """A parsed task file."""

    path: Path
    sha256: str                 # "sha256:<hex>" of the file's bytes
    tasks: tuple[Task, ...]
    ignored: tuple[tuple[int, str, str], ...] = ()   # (line, text, why) read but never run
    warnings: tuple[str, ...] = ()
    context: str = ""           # the text before the first task's group: every fresh session's
    folded: tuple[tuple[int, str, int], ...] = ()   # (line, text, line of the task it joined)
    title: str = ""             # the plan's `#` heading
    depends: tuple[tuple[str, tuple[str, ...]], ...] = ()   # group -> the groups it waits for


def parse(text: str) -> tuple[Task, ...]:
    """The tasks in a task file's text, in file order (empty if there are none)."""
    return read_text(text)[0]


def read_text(text: str) -> tuple[tuple[Task, ...], Reading]:
    """The tasks, and the rest of the reading (notes, warnings, checks, context)."""
    # marko also turns CRLF and CR into LF; doing it first keeps its offsets equal to ours.
    from agentloop.plan.groups import numbered
    from agentloop.plan.markdown import read

    text = as_read(text)
    reading = read(text)
    checks = reading.checks
    names = numbered(item.group for item in reading.items)
    tasks = tuple(replace(_task(index, name, item.line, item.text, item.marker in TICKED),
                          optional=item.optional, parts=tuple(item.parts),
                          checks=tuple(dict.fromkeys(checks.get(None, []) +
                                                     checks.get(item.group, []))))
                  for index, (item, name) in enumerate(zip(reading.items, names), 1))
    return tasks, reading


def as_read(text: str) -> str:
    """The text as the plan's reader takes it: no BOM, LF line ends, and a YAML front matter
    block (a docs site's, Obsidian's: `---` on the first line, `key:` lines, a closing `---` or
    `...`) blanked, its lines kept so that every line number is the file's. Its list (`tags:`)
    would be tasks, its closing `---` a heading."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith("---"):
        return text   # no pattern compiled on a plain run's way to its first agent
    import re

    lines = text.split("\n")
    if lines[0].rstrip() != "---" or len(lines) < 3 or not re.match(
            r"[A-Za-z_][\w.-]*[ \t]*:(?:[ \t]|$)", lines[1]):
        return text   # a rule over a plan's first lines (`---`, `- one`) is no front matter
    end = next((n for n, line in enumerate(lines[1:], 1) if line.rstrip() in ("---", "...")),
               None)
    return text if end is None else "\n" * (end + 1) + "\n".join(lines[end + 1:])


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


def load(path: Path) -> TaskFile:
    """Read, hash and parse the task file at `path`; TaskFileError if it is unusable."""
    return from_bytes(path, read_bytes(path))


def parsed(plan: TaskFile | Read) -> TaskFile:
    """The plan parsed: as it is, or from the bytes read; TaskFileError if it is unusable."""
    return plan if isinstance(plan, TaskFile) else from_bytes(plan.path, plan.data)


def from_bytes(path: Path, data: bytes, emptied: bool = False) -> TaskFile:
    """Hash and parse the task file's bytes, already read; TaskFileError if it is unusable.
    `emptied`: a file with words but no task left is a plan whose every task was deleted (a
    run's re-read: none of them starts), not an error; a blank one may be half saved still."""
    from agentloop.plan.depends import resolve

    digest = file_hash(data)
    text = _decode(path, data)
    tasks, reading = read_text(text)
    if not tasks and not (emptied and text.strip()):
        raise TaskFileError(f"task file {shown(path)} has no tasks: "
                            "write each task as a list item, like `- fix the login bug`")
    for task in tasks:
        size = len(task.text.encode("utf-8"))
        if size > MAX_TASK_BYTES:
            raise TaskFileError(f"task {task.index} (line {task.line}) of {shown(path)} is "
                                f"{size:,} bytes; a task can be at most {MAX_TASK_BYTES // 1024} "
                                "KiB: put the long part in a file and name that file in the task")
    depends = resolve([(t.line, t.group) for t in tasks], as_read(text))
    return TaskFile(path=path, sha256=digest, tasks=tasks,
                    ignored=tuple(reading.ignored), warnings=tuple(reading.warnings),
                    context=reading.context, folded=tuple(reading.folded),
                    title=reading.title, depends=tuple(depends.items()))


def _decode(path: Path, data: bytes) -> str:
    """The file's text; TaskFileError if it is UTF-16, binary or not UTF-8."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TaskFileError(f"task file {shown(path)} is UTF-16: save it as UTF-8")
    if b"\x00" in data:
        raise TaskFileError(f"task file {shown(path)} is not text (it contains NUL bytes)")
    try:
        return data.decode("utf-8")  # parse() drops a BOM
    except UnicodeDecodeError as e:
        before = data[: e.start].decode("utf-8")
        line = before.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
        raise TaskFileError(f"task file {shown(path)} is not UTF-8 text "
                            f"(byte 0x{data[e.start]:02x} on line {line})") from e


def __getattr__(name: str) -> Any:
    """The markdown reader's names, imported on first use (see _FROM_MARKDOWN)."""
    if name in _FROM_MARKDOWN:
        from agentloop.plan import markdown

        return getattr(markdown, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
