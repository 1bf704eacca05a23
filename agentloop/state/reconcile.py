"""Plans change while they are worked on: a task appended, one reworded, one ticked by the agent.
When the task file's hash changed, the saved records are matched to the new file's tasks instead
of refusing to go on.

- A task is known by its identity: its group and its text with whitespace folded. A saved task
  whose identity is in the new file keeps its whole record (status, change, session, costs,
  history, log name), even if it moved; duplicates match in file order.
- A new task that stands where an unmatched old one of the same group stood is an edit: a new
  pending task; the old one's change stays in history and is named.
- Other new tasks are added, pending; other old ones are removed (their records returned, for
  the archive).
- A task newly ticked `[x]` in the file is skipped; a completed one stays completed.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from dataclasses import dataclass

from agentloop.plan.parse import TaskFile
from agentloop.state.schema import TaskState


@dataclass(frozen=True)
class Reconciled:
    """The new records, in file order, and what changed."""

    tasks: list[TaskState]
    added: tuple[int, ...] = ()                    # indices in the new file
    edited: tuple[tuple[int, str], ...] = ()       # (new index, the old change or "")
    removed: tuple[TaskState, ...] = ()
    ticked: tuple[int, ...] = ()
    kept_done: int = 0
    replaced: tuple[TaskState, ...] = ()           # the old records of the edited tasks

    @property
    def dropped(self) -> tuple[TaskState, ...]:
        """The old records the new file has no place for: removed and edited tasks'."""
        return self.removed + self.replaced

    def summary(self) -> str:
        """`1 task added, 1 edited, 1 removed; 5 completed tasks kept`, and the old changes."""
        parts = [f"{len(self.added)} task{'s' * (len(self.added) != 1)} added",
                 f"{len(self.edited)} edited", f"{len(self.removed)} removed"]
        if self.ticked:
            parts.append(f"{len(self.ticked)} ticked off")
        text = ", ".join(parts) + f"; {self.kept_done} completed task" \
            f"{'s' * (self.kept_done != 1)} kept"
        old = [f"task {i}'s earlier change {c[:12]} stays in history" for i, c in self.edited
               if c]
        return text + ("" if not old else " (" + "; ".join(old) + ")")


def identity(group: str, text: str) -> tuple[str, str]:
    """What a task is, whatever its position: its group and its text, whitespace folded."""
    return group, " ".join(text.split())


def reconcile(old: list[TaskState], new: TaskFile) -> Reconciled:
    """Match the saved records to the re-read file by the rules in the module doc."""
    saved: dict[tuple[str, str], deque[TaskState]] = defaultdict(deque)
    for record in old:
        saved[identity(record.group, record.task)].append(record)
    fresh = [TaskState.from_task(t) for t in new.tasks]
    result: list[TaskState | None] = []
    ticked = []
    for task, record in zip(new.tasks, fresh):
        match = saved.get(identity(task.group, task.text))
        if not match:
            result.append(None)
            continue
        kept = dataclasses.replace(match.popleft(), index=task.index, line=task.line,
                                   checks=record.checks, optional=record.optional)
        if task.checked and kept.status not in ("completed", "skipped"):
            kept.status = "skipped"
            ticked.append(task.index)
        result.append(kept)
    leftover = [r for queue in saved.values() for r in queue]
    return _fill(result, fresh, leftover, ticked)


def _fill(result: list[TaskState | None], fresh: list[TaskState], leftover: list[TaskState],
          ticked: list[int]) -> Reconciled:
    """New records where nothing matched: an edit of an unmatched old task of the same group
    (in order), else an addition; the old ones nothing matched are removed."""
    by_group: dict[str, deque[TaskState]] = defaultdict(deque)
    for record in sorted(leftover, key=lambda r: r.index):
        by_group[record.group].append(record)
    added, edited, replaced = [], [], []
    taken = {r.log_name for r in result if r is not None}
    for i, record in enumerate(fresh):
        if result[i] is not None:
            continue
        if by_group[record.group]:
            replaced.append(by_group[record.group].popleft())
            edited.append((record.index, replaced[-1].change_id or ""))
        else:
            added.append(record.index)
        name, n = record.log_name, 1
        while name in taken:  # an old task kept its log name; a new one never shares it
            n += 1
            name = f"{record.log_name}-{n}"
        taken.add(name)
        result[i] = dataclasses.replace(record, log_name=name)
    removed = tuple(r for queue in by_group.values() for r in queue)
    tasks = [r for r in result if r is not None]
    kept_done = sum(1 for r in tasks if r.status == "completed")
    return Reconciled(tasks, tuple(added), tuple(edited), removed, tuple(ticked), kept_done,
                      tuple(replaced))
