"""Ticking a landed task's boxes in the plan (the `tick-boxes` setting): `- [ ]` becomes `- [x]`
on the task's own line and on those of its sub-items (nested under it, numbered under it, a task
section's steps), and not one other byte of the file changes. A box in a task's text is not what
the task is (agentloop.plan.boxes.task_key): the next run knows the ticked task as the same one.

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
from dataclasses import dataclass
from pathlib import Path

from agentloop.errors import AgentLoopError
from agentloop.files.scratch import scratch
from agentloop.plan import parse
from agentloop.plan.boxes import BOX_LINE, OPEN, mark, task_key
from agentloop.plan.markdown import Reading

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Ticked:
    """What ticking did: the plan's hash before and after (both "" when nothing was written),
    and why nothing was ticked when that needs saying ("" otherwise)."""

    before: str = ""
    after: str = ""
    note: str = ""
    written: bytes = b""   # the plan as ticked: what a run keeps should the file go (plan_kept)
    # The ticked file's device and inode (a new file, replaced over the plan): the plan's now.
    file: tuple[int, int] | None = None


def tick(path: Path, group: str, text: str, line: int) -> Ticked:
    """Tick the boxes of the task of `group` whose text is `text` (last seen at `line`) in the
    plan at `path`; a task without a box, or with every box ticked, is left as it is."""
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
        if isinstance(lines, str):
            return Ticked(note=lines)
        new = _ticked(source, lines)
        if new == source:
            return Ticked()
        why = _differs(tasks, new)
    except (UnicodeDecodeError, AgentLoopError):
        return Ticked(note="the plan cannot be read now (half saved?)")
    if why:
        return Ticked(note=why)
    out = new.encode("utf-8")
    written = _replace(real, data, seen, out)
    if isinstance(written, str):
        return Ticked(note=written)
    return Ticked(parse.file_hash(data), parse.file_hash(out), written=out, file=written)


def _target_lines(tasks: tuple[parse.Task, ...], reading: Reading, group: str, text: str,
                  line: int) -> list[int] | str:
    """The 1-based lines of the task's boxes ([] when it has none), or why the task cannot be
    ticked."""
    wanted = task_key(text)
    found = [i for i, task in enumerate(tasks)
             if task.group == group and task_key(task.text) == wanted]
    if not found:
        return "the plan no longer has it as it ran (reworded, moved to another group, removed)"
    if len(found) > 1:   # twins: the one still at the task's line, else no guess
        found = [i for i in found if tasks[i].line == line]
        if not found:
            return "the plan has it more than once, none at its line"
    return reading.items[found[0]].boxes


def _differs(tasks: tuple[parse.Task, ...], new: str) -> str:
    """Why `new` does not read as the plan of `tasks` with one task more ticked (and nothing
    else changed), or ""."""
    def read(found: tuple[parse.Task, ...]) -> list[tuple[str, str, bool]]:
        return [(t.group, task_key(t.text), t.checked) for t in found]
    old, now = read(tasks), read(parse.read_text(new)[0])
    if len(old) == len(now) and all(a[:2] == b[:2] for a, b in zip(old, now)) \
            and sum(a != b for a, b in zip(old, now)) <= 1:
        return ""
    return "ticking it would change how the plan reads (its tasks would not be the same)"


def _ticked(source: str, lines: list[int]) -> str:
    """`source` with the open box on each of `lines` ticked (`source` itself if none is)."""
    parts = _LINE_END.split(source)
    ends = _LINE_END.findall(source) + [""]
    for n in lines:
        found = BOX_LINE.match(parts[n - 1])
        if found is not None and mark(found.group(2)) in OPEN:
            parts[n - 1] = found.group(1) + "x" + parts[n - 1][found.end(2):]
    return "".join(part + end for part, end in zip(parts, ends))


def _replace(real: Path, data: bytes, seen: os.stat_result, out: bytes) -> str | tuple[int, int]:
    """Write `out` over the plan through a temporary file beside it, only if the plan still
    holds `data` as `seen`; why not, or the new file's device and inode."""
    try:
        fd, tmp = scratch(real.parent, f".{real.name}.", ".tick")
    except OSError as exc:
        return f"its folder cannot be written ({exc.strerror})"
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(out)
            handle.flush()
            os.fsync(handle.fileno())
            made = os.fstat(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(seen.st_mode))
        now = os.stat(real)
        if ((now.st_mtime_ns, now.st_size, now.st_ino) != (seen.st_mtime_ns, seen.st_size,
                                                           seen.st_ino)
                or real.read_bytes() != data):
            return "the plan changed while agent-loop was ticking it (yours wins)"
        os.replace(tmp, real)
        return made.st_dev, made.st_ino
    except OSError as exc:
        return f"the plan could not be written ({exc.strerror})"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
