"""Where a run lives and which tasks it has: the project root, its store, and the task list.

The markdown is parsed once per version of the task file: when state.json holds the same file
hash, the tasks come from the state (marko costs about 0.5 ms a task; a 10,000-task file would
take seconds to parse on every --status).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from agentloop import taskfile
from agentloop.errors import StateError
from agentloop.state import State, Store, TaskState
from agentloop.vcs import find_root


@dataclass(frozen=True)
class Project:
    """A task file, the folder agent-loop works in, and its store."""

    task_file: Path
    root: Path
    store: Store

    @property
    def task_file_name(self) -> str:
        """The task file as recorded in the state: relative to the root where possible."""
        return self.store.relative(self.task_file)


def open_project(task_file: Path, cwd: Path) -> Project:
    """Locate the root: the repository around `cwd`, else the task file's folder."""
    path = (cwd / task_file).resolve() if not task_file.is_absolute() else task_file.resolve()
    root = find_root(cwd.resolve()) or path.parent
    return Project(path, root, Store(root))


def _changes(old: list[TaskState], new: tuple[taskfile.Task, ...]) -> str:
    a = [(t.group, t.task) for t in old]
    b = [(t.group, t.text) for t in new]
    added = removed = edited = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "insert":
            added += j2 - j1
        elif op == "delete":
            removed += i2 - i1
        elif op == "replace":
            edited += min(i2 - i1, j2 - j1)
            added += max(0, (j2 - j1) - (i2 - i1))
            removed += max(0, (i2 - i1) - (j2 - j1))
    return f"{added} added, {removed} removed, {edited} edited"


def load_state(project: Project) -> tuple[State, bool]:
    """The state for this task file, and whether it was saved before.

    Raises StateError when the saved state belongs to another task file or to another
    version of this one: the user decides, with --reset, to start fresh.
    """
    data = taskfile.read_bytes(project.task_file)
    digest = taskfile.file_hash(data)
    saved = project.store.load()
    if saved is not None:
        if saved.task_file != project.task_file_name:
            raise StateError(f"{project.store.state_path} belongs to {saved.task_file}, not "
                             f"{project.task_file_name}; run with --reset to start fresh with this file")
        if saved.task_file_hash == digest:
            return saved, True
        tasks = taskfile.from_bytes(project.task_file, data).tasks
        raise StateError(f"{project.task_file_name} changed since the last run "
                         f"({_changes(saved.tasks, tasks)}); run with --reset to start fresh "
                         "(the old state and logs are archived)")
    return state_from(project, taskfile.from_bytes(project.task_file, data)), False


def state_from(project: Project, parsed: taskfile.TaskFile) -> State:
    """A state with every task of the parsed file pending (checked-off ones skipped), and what
    the file holds besides tasks, so --dry-run on an unchanged file needs no parse."""
    return State(task_file=project.task_file_name, task_file_hash=parsed.sha256,
                 tasks=[TaskState.from_task(t) for t in parsed.tasks],
                 context=parsed.context or None,
                 ignored=[{"line": n, "text": t, "why": w} for n, t, w in parsed.ignored],
                 warnings=list(parsed.warnings))
