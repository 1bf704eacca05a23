"""Ticking a landed task's box in the plan (the `tick-boxes` setting): `- [ ]` becomes `- [x]` on
the task's own line, and not one other byte of the file changes. Boxes inside the task's text
(its sub-items, indented or numbered under it) stay as they are: they are part of what the task
is, and a task whose text changed is another task to the next run (agentloop.state.reconcile).

The plan is the user's file and may be open in their editor, so the tick is careful:
- the file is read and parsed again; the task is found as a new run would find it (its group
  and its text, whitespace folded); a task that was reworded, removed or is written twice
  elsewhere is not ticked, and the caller is told why (never a guess);
- the new text must read as the same tasks with this one ticked, or nothing is written;
- it is written to a temporary file in the same folder and `os.replace`d over the plan, and
  only if the plan's bytes, size and modification time are still those read a moment before.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentloop.errors import AgentLoopError
from agentloop.plan import parse
from agentloop.plan.markdown import OPEN, Reading

# A list item's first line up to its box: the marker, the space after it, `[` and the box's
# character (a BOM may open the file's first line).
_BOX = re.compile(r"(\ufeff?[ \t]{0,3}(?:\d{1,9}[.)]|[-+*])[ \t]+\[)([^\]\n\r])\]")
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Ticked:
    """What ticking did: the plan's hash before and after (both "" when nothing was written),
    and why nothing was ticked when that needs saying ("" otherwise)."""

    before: str = ""
    after: str = ""
    note: str = ""


def tick(path: Path, group: str, text: str, line: int) -> Ticked:
    """Tick the box of the task of `group` whose text is `text` (last seen at `line`) in the plan
    at `path`; a task without a box, or already ticked, is left as it is."""
    real = Path(os.path.realpath(path))   # a symlinked plan: its target is the file to write
    try:
        seen = os.stat(real)
        data = real.read_bytes()
    except OSError as exc:
        return Ticked(note=f"the plan could not be read ({exc.strerror})")
    if seen.st_nlink > 1:
        return Ticked(note="the plan has other hard links, which a replaced file would not keep")
    try:
        source = data.decode("utf-8")
        tasks, reading = parse.read_text(source)
        lines = _target_lines(tasks, reading, group, text, line)
        new = _ticked(source, lines) if isinstance(lines, list) and lines else None
        why = _differs(tasks, new) if new is not None else ""
    except (UnicodeDecodeError, AgentLoopError):
        return Ticked(note="the plan cannot be read now (half saved?)")
    if isinstance(lines, str) or why:
        return Ticked(note=why or str(lines))
    if new is None:
        return Ticked() if not lines else Ticked(note="its line has no box agent-loop can tick")
    out = new.encode("utf-8")
    why = _replace(real, data, seen, out)
    if why:
        return Ticked(note=why)
    return Ticked(parse.file_hash(data), parse.file_hash(out))


def _target_lines(tasks: tuple[parse.Task, ...], reading: Reading, group: str, text: str,
                  line: int) -> list[int] | str:
    """The 1-based lines whose open boxes tick the task ([] when none is open), or why the task
    cannot be ticked."""
    wanted = " ".join(text.split())
    found = [i for i, task in enumerate(tasks)
             if task.group == group and " ".join(task.text.split()) == wanted]
    if not found:
        return "the plan no longer has it as it ran (reworded, moved to another group, removed)"
    if len(found) > 1:   # twins: the one still at the task's line, else no guess
        found = [i for i in found if tasks[i].line == line]
        if not found:
            return "the plan has it more than once, none at its line"
    item = reading.items[found[0]]
    return [item.line] if item.marker in OPEN else []


def _differs(tasks: tuple[parse.Task, ...], new: str) -> str:
    """Why `new` does not read as the plan of `tasks` with one task more ticked (and nothing
    else changed), or ""."""
    def read(found: tuple[parse.Task, ...]) -> list[tuple[str, str, bool]]:
        return [(t.group, " ".join(t.text.split()), t.checked) for t in found]
    old, now = read(tasks), read(parse.read_text(new)[0])
    if len(old) == len(now) and all(a[:2] == b[:2] for a, b in zip(old, now)) \
            and sum(a != b for a, b in zip(old, now)) <= 1:
        return ""
    # A checklist with no open box left reads its plain bullets as tasks (the plan's rules):
    # ticking the last box would turn its notes into work for the next run.
    return ("ticking it would change how the plan reads (its last open box: its plain bullets "
            "would then be tasks)")


def _ticked(source: str, lines: list[int]) -> str | None:
    """`source` with the box of each of `lines` ticked, or None when a line has no box."""
    parts = _LINE_END.split(source)
    ends = _LINE_END.findall(source) + [""]
    for n in lines:
        found = _BOX.match(parts[n - 1])
        if found is None or found.group(2) not in OPEN:
            return None
        parts[n - 1] = found.group(1) + "x" + parts[n - 1][found.end(2):]
    return "".join(part + end for part, end in zip(parts, ends))


def _replace(real: Path, data: bytes, seen: os.stat_result, out: bytes) -> str:
    """Write `out` over the plan through a temporary file beside it, only if the plan still
    holds `data` as `seen`; why not, or ""."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tick", dir=real.parent)
    except OSError as exc:
        return f"its folder cannot be written ({exc.strerror})"
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(out)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(seen.st_mode))
        now = os.stat(real)
        if ((now.st_mtime_ns, now.st_size, now.st_ino) != (seen.st_mtime_ns, seen.st_size,
                                                           seen.st_ino)
                or real.read_bytes() != data):
            return "the plan changed while agent-loop was ticking it (yours wins)"
        os.replace(tmp, real)
        return ""
    except OSError as exc:
        return f"the plan could not be written ({exc.strerror})"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
