"""What the agent's final message says: a signal line, and its Progress and Learnings sections.

The loop's system prompt teaches the format. A signal counts only as a line of its own (outside
code fences and block quotes), so a message that merely mentions TASK_COMPLETE is no signal.
"""

from __future__ import annotations

import re

from agentloop.ondemand import dataclass

BLOCKED = "TASK_BLOCKED"
FATAL = "AGENT_LOOP_ERROR"

# A signal line, optionally in bold or code marks: TASK_BLOCKED: reason, TASK_COMPLETE, ...
_SIGNAL = re.compile(r"^[*_`]*(TASK_BLOCKED|TASK_COMPLETE|AGENT_LOOP_ERROR)[*_`]*"
                     r"(?:\s*:\s*(.*?))?[*_`]*\s*$")
# A section heading line: "Progress:", "## Learnings", "**Learnings:**" with text after or not.
_SECTION = re.compile(r"^(?:#{1,6}\s*)?[*_]*(Progress|Learnings)[*_]*\s*:?[*_]*\s*(.*)$",
                      re.IGNORECASE)


@dataclass(frozen=True)  # made when an agent's first run ends (agentloop.ondemand)
class Report:
    """The parts of a final message agent-loop acts on."""

    signal: str | None = None      # BLOCKED, COMPLETE, FATAL or None
    reason: str = ""               # the text after `TASK_BLOCKED:` / `AGENT_LOOP_ERROR:`
    progress: str = ""
    learnings: str = ""


def plain_lines(text: str, indented_code: bool = False) -> list[tuple[str, bool]]:
    """Each line with whether it is plain text: not inside a code fence, not quoted, and with
    `indented_code` not indented by four spaces or a tab either."""
    lines, fenced = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            lines.append((line, False))
            continue
        indented = indented_code and line.startswith(("    ", "\t"))
        lines.append((line, not fenced and not indented and not stripped.startswith(">")))
    return lines


def first_line(text: str, limit: int = 160) -> str:
    """The first non-blank line, cut to `limit` characters."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse(text: str) -> Report:
    """Read the signal (the last signal line wins) and the two sections out of a message."""
    lines = plain_lines(text)
    signal, reason = None, ""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line, plain in lines:
        stripped = line.strip()
        found = _SIGNAL.match(stripped) if plain else None
        if found:
            signal, reason = found.group(1), (found.group(2) or "").strip()
            current = None
            continue
        heading = _SECTION.match(stripped) if plain else None
        if heading:
            current = sections.setdefault(heading.group(1).lower(), [])
            if heading.group(2).strip():
                current.append(heading.group(2).strip())
            continue
        if current is not None:
            if plain and stripped.startswith("#"):
                current = None  # another heading ends the section
            else:
                current.append(line.rstrip())
    return Report(signal=signal, reason=reason,
                  progress="\n".join(sections.get("progress", [])).strip(),
                  learnings="\n".join(sections.get("learnings", [])).strip())
