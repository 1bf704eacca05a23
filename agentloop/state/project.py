"""Where a run lives and which tasks it has: the project root, its store, and the task list.

The markdown is parsed once per version of the task file: when state.json holds the same file
hash, the tasks come from the state (marko costs about 0.5 ms a task; a 10,000-task file would
take seconds to parse on every --status). When the hash changed, the saved records are
reconciled with the new file (agentloop.reconcile) instead of refused.

Each task file is a plan with its own folder: the first plan of a repository keeps
`.agent-loop/` itself (where every earlier version of agent-loop kept its one plan), every other
plan gets `.agent-loop/plans/<name>-<hash>/`. One run at a time per repository still holds.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.plan import source
from agentloop.state import plain
from agentloop.state.schema import State, TaskState, loads
from agentloop.state.store import Store
from agentloop.vcs import find_root

if TYPE_CHECKING:
    from agentloop.plan.parse import TaskFile
    from agentloop.state.reconcile import Reconciled


@dataclass(frozen=True)
class Project:
    """A task file, the folder agent-loop works in, and its store."""

    task_file: Path
    root: Path
    store: Store
    here: Path | None = None    # where the user stands: what a path shown to them is from

    @property
    def task_file_name(self) -> str:
        """The task file as recorded in the state: relative to the root where possible."""
        return self.store.relative(self.task_file)

    def shown(self, path: str | Path) -> str:
        """A path (absolute, or relative to the root as the state keeps them) as the user can
        type it from where they stand."""
        full = self.root / path
        if self.here is None:
            return self.store.relative(full)
        return os.path.relpath(full, self.here)


def open_project(task_file: Path, cwd: Path) -> Project:
    """Locate the root: the repository around `cwd`, else the task file's folder."""
    path, root = plain.locate(task_file, cwd)
    return Project(path, root, Store(root, *plan_folder(root, path)), cwd.resolve())


def rehearsal_of(project: Project) -> Project:
    """The same plan's rehearsal: its state in `<plan folder>/rehearsal/`, never the plan's."""
    return dataclasses.replace(project, store=Store(project.root,
                                                    project.store.dir / "rehearsal"))


def plan_folder(root: Path, task_file: Path) -> tuple[Path, tuple[bytes, Any] | None]:
    """Where this plan's state, logs and learnings live (see the module doc); and
    `.agent-loop/state.json` as read to tell (its bytes and their JSON), so that the store
    reads a state of thousands of records once, not twice."""
    return plain.plan_folder(root, task_file, loads)


def load_state(project: Project) -> tuple[State, bool]:
    """The state for this task file, and whether it was saved before."""
    state, saved, _ = load_plan(project)
    return state, saved


def load_plan(project: Project, plan: TaskFile | source.Read | None = None,
              ) -> tuple[State, bool, Reconciled | None]:
    """The state, whether it was saved before, and what changed in the task file since (None
    when nothing did): a changed file is reconciled with the saved records, in memory; so is
    one an earlier version of the reader read (source.READER). `plan`: the task file as the
    caller already read it (a run reads it once); else it is read here, and parsed only when
    the state does not already hold this version of it, read by this reader."""
    if plan is None:
        plan = source.read(project.task_file)
    digest = plan.sha256
    saved = project.store.load()
    if saved is not None and saved.task_file_hash == digest and saved.reader == source.READER:
        return saved, True, None
    from agentloop.plan import parse  # a new or edited plan only

    parsed = parse.parsed(plan)
    if saved is None:
        return state_from(project, parsed), False, None
    from agentloop.state.reconcile import reconcile  # an edited plan only

    changes = reconcile(saved.tasks, parsed, _edited_since(project))
    reread = saved.task_file_hash == digest   # the same file, read anew by a newer reader
    fresh = state_from(project, parsed)
    saved.tasks, saved.task_file_hash = changes.tasks, parsed.sha256
    saved.context, saved.ignored, saved.warnings = fresh.context, fresh.ignored, fresh.warnings
    saved.depends = fresh.depends
    saved.folded, saved.reader, saved.title = fresh.folded, fresh.reader, fresh.title
    saved.retired += [run for record in changes.dropped for run in record.history]
    if reread:   # news only if it reads differently
        return saved, True, dataclasses.replace(changes, reread=True) if changes.news() else None
    return saved, True, changes


def _edited_since(project: Project) -> bool:
    """Whether the task file was written after the state was last saved (the run that saved it
    was over): a completed task reworded then was reworded after it was done. A write while
    that run worked (a box it ticked, a task reworded as it ran) is not."""
    saved = project.store.state_path, project.store.journal.path
    try:
        written = project.task_file.stat().st_mtime_ns
        saved_at = max(p.stat().st_mtime_ns for p in saved if p.exists())
    except (OSError, ValueError):
        return True
    return written > saved_at


def state_from(project: Project, parsed: TaskFile) -> State:
    """A state with every task of the parsed file pending (checked-off ones skipped), and what
    the file holds besides tasks, so --dry-run on an unchanged file needs no parse."""
    return State(task_file=project.task_file_name, task_file_hash=parsed.sha256,
                 reader=source.READER,
                 tasks=[TaskState.from_task(t) for t in parsed.tasks],
                 context=parsed.context or None, title=parsed.title or None,
                 depends={g: list(d) for g, d in parsed.depends},
                 ignored=[{"line": n, "text": t, "why": w} for n, t, w in parsed.ignored],
                 warnings=list(parsed.warnings),
                 folded=[{"line": n, "text": t, "into": i} for n, t, i in parsed.folded])


def plan_stores(cwd: Path) -> tuple[Path, list[Store]]:
    """The root around `cwd` and the store of every plan that has run there: the first plan's
    in `.agent-loop/`, the others' in `.agent-loop/plans/<name>-<hash>/`."""
    root = find_root(cwd.resolve()) or cwd.resolve()
    return root, [Store(root, f) for f in plain.plan_folders(root)]
