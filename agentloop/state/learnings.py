"""Progress and learnings the agent reports, kept across groups in `.agent-loop/`.

`learnings.md` is the current text, the one a new session is given; the user may read and edit
it between runs, and the edit is what the next session sees. `learnings.jsonl` keeps every
version the agent reported, with its task, iteration and time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agentloop.files import jsonbytes

# The most of learnings.md a prompt carries: the newest part, where the file grows.
PROMPT_LIMIT = 8000


class Learnings:
    """The learnings files of one project."""

    def __init__(self, folder: Path, plan: str = "") -> None:
        self.plan = plan                       # the task file, as its entries name it
        self.path = folder / "learnings.md"
        self.history = folder / "learnings.jsonl"
        self._written: str | None = None  # what this run last wrote to learnings.md
        # A parallel run's lanes record from threads of their own: one at a time, each adding
        # to the file as the one before left it, so none overwrites another's.
        self._lock = threading.Lock()

    def current(self) -> str:
        """The learnings as they are now (the user's edits included), or ""."""
        try:
            return self.path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            if self._written is None:
                return ""
        # Gone during this run: an agent's clean-up, not the user's choice. Written back.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(self._written, encoding="utf-8")
        return self._written.strip()

    def for_prompt(self) -> str:
        """The preamble a fresh session gets, or "" when nothing was learned yet."""
        text = self.current()
        if not text:
            return ""
        if len(text) > PROMPT_LIMIT:
            text = "…" + text[-PROMPT_LIMIT:]
        return ("Learnings from earlier tasks of this task list (from .agent-loop/learnings.md):\n"
                f"{text}\n\n---\n\n")

    def record(self, task: int, iteration: int, time: str, progress: str, learnings: str,
               summary: str = "") -> None:
        """Keep one version; new learnings go into learnings.md under their task, replacing
        that task's entry from an earlier run of it (a redo learns anew, it does not repeat)."""
        with self._lock:
            self._record(task, iteration, time, progress, learnings, summary)

    def _record(self, task: int, iteration: int, time: str, progress: str, learnings: str,
                summary: str) -> None:
        """One at a time (a parallel run's lanes record from threads of their own).

        Learnings of "none" (as the system prompt tells the agent to write) are no learnings.
        """
        if learnings.strip().strip(".").lower() in ("", "none", "n/a", "-"):
            learnings = ""
        if not progress and not learnings:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"task": task, "iteration": iteration, "time": time, "progress": progress,
                 "learnings": learnings}
        with open(self.history, "ab") as out:
            out.write(jsonbytes.dumps(entry) + b"\n")
        if learnings:
            # Written into the file as it is now, so the user's edits stay.
            key = f"## Task {task}" + (f", iteration {iteration}" if iteration > 1 else "")
            about = f": {summary}" if summary else ""
            plan = f"{self.plan}, " if self.plan else ""
            text = replace_entry(self.current(), key,
                                 f"{key}{about} ({plan}{time})\n{learnings.strip()}\n")
            self.path.write_text(text, encoding="utf-8")
            self._written = text


def replace_entry(text: str, key: str, entry: str) -> str:
    """`text` with the entry headed `key` (`## Task 3`, then `:` or ` (`) replaced by `entry`,
    or `entry` added at the end; everything else as it was."""
    lines = text.split("\n") if text else []
    start = next((i for i, line in enumerate(lines)
                  if line.startswith((key + ":", key + " ("))), None)
    if start is None:
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + entry
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    before = "\n".join(lines[:start]).rstrip("\n")
    after = "\n".join(lines[end:]).strip("\n")
    return "\n\n".join(part for part in (before, entry.rstrip("\n"), after) if part) + "\n"
