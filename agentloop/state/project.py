"""Where a run lives and which tasks it has: the project root, its store, and the task list.

The markdown is parsed once per version of the task file: when state.json holds the same file
hash, the tasks come from the state (marko costs about 0.5 ms a task; a 10,000-task file would
take seconds to parse on every --status). When the hash changed, the saved records are
reconciled with the new file (agentloop.state.reconcile) instead of refused.

Each task file is a plan with its own folder: the first plan of a repository keeps
`.agent-loop/` itself (where every earlier version of agent-loop kept its one plan), every other
plan gets `.agent-loop/plans/<name>-<hash>/`. One run at a time per repository still holds.
A plan renamed (`git mv tasks.md plan.md`) takes over the state of its old name, whose file is
gone (agentloop.state.renamed_plan), so what it finished is not paid for again.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.errors import StateError
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.plan import source
from agentloop.state import plain, renamed_plan
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
    renamed_from: str = ""      # the plan's name before a rename, whose state it took over
    # A plan renamed over another that had run (`mv a.md b.md`): what became of b.md's older
    # state, which the renamed plan's state replaced ("" when there was none).
    older: str = ""
    # Where that older state is (its own folder, or its archive once a run moved it aside):
    # its runs count in this plan's totals (load_plan), so no money spent leaves them.
    older_dir: Path | None = None

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


def open_project(task_file: Path, cwd: Path, take_over: bool = False) -> Project:
    """Locate the root: the repository around `cwd`, else the task file's folder. A plan with
    no state of its own reads the state of the plan it was renamed from
    (agentloop.state.renamed_plan); a run (`take_over`) makes that state its own, moving its
    folder, while no other run goes (one of the old plan's would find its folder gone):
    `--status` and `--dry-run` change nothing."""
    path, root = plain.locate(task_file, cwd)
    folder, read = plan_folder(root, path)
    folder, read, former, older, older_dir = renamed_plan.state_folder(root, path, folder, read,
                                                                       take_over)
    return Project(path, root, Store(root, folder, read), cwd.resolve(), former, older,
                   older_dir)




def took_over(project: Project) -> list[str]:
    """The one line a plan says when it took over the state of the plan it was renamed from."""
    shown = project.shown(project.task_file)
    if project.older:
        came = (f"{project.renamed_from} was renamed over it ({project.renamed_from} is gone, "
                "with this very text)" if project.renamed_from else
                "a run's plan was renamed over it while the run worked")
        return [f"{shown}: {came}: that plan's state is taken over, so what it finished stays "
                f"done; {shown}'s older state {project.older}"]
    if not project.renamed_from:
        return []
    return [f"{project.shown(project.task_file)}: no state of its own, and "
            f"{project.renamed_from} is gone with the same tasks (renamed?): its state is taken "
            f"over, so what it finished stays done"]


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
    if saved is not None and project.older_dir is not None:
        saved.retired += _older_runs(project.root, project.older_dir)
    if saved is not None and saved.task_file != project.task_file_name:
        saved.task_file = project.task_file_name   # taken over from its old name (open_project)
    if saved is not None and saved.task_file_hash == digest and saved.reader == source.READER:
        return saved, True, None
    from agentloop.plan import parse  # a new or edited plan only

    parsed = parse.parsed(plan)
    if saved is None:
        return state_from(project, parsed), False, None
    from agentloop.state.reconcile import reconcile  # an edited plan only

    changes = reconcile(saved.tasks, parsed)
    reread = saved.task_file_hash == digest   # the same file, read anew by a newer reader
    take_edit(project, saved, parsed, changes)
    if reread:   # news only if it reads differently
        return saved, True, dataclasses.replace(changes, reread=True) if changes.news() else None
    return saved, True, changes


def take_edit(project: Project, saved: State, parsed: TaskFile, changes: Reconciled) -> None:
    """`saved` made the state of the edited plan `parsed`, its records as `changes` matched
    them (agentloop.state.reconcile): what the file holds besides tasks read anew, and the
    runs of the records it has no place for kept among the retired, so their cost counts."""
    fresh = state_from(project, parsed)
    saved.tasks, saved.task_file_hash = changes.tasks, parsed.sha256
    saved.context, saved.ignored, saved.warnings = fresh.context, fresh.ignored, fresh.warnings
    saved.depends = fresh.depends
    saved.folded, saved.reader, saved.title = fresh.folded, fresh.reader, fresh.title
    saved.retired += [run for record in changes.dropped for run in record.history]


def _older_runs(root: Path, folder: Path) -> list[Any]:
    """The agent runs of the state in `folder`, which a renamed plan's state replaced
    (open_project, Project.older_dir): runs of tasks this plan no longer has, as an edit's
    removed tasks are, so their cost still counts in this plan's totals. Kept by the run's
    first save (the records' one writer); once saved the older state is no longer found, so
    they are never counted twice. Each is marked as that plan's (Attempt.other_plan): not spent
    on this plan, so no part of its --budget."""
    try:
        older = Store(root, folder).load()
    except StateError:
        return []   # unreadable: it stays where the line that names it says
    if older is None:
        return []
    runs = [run for task in older.tasks for run in task.history] + list(older.retired)
    for run in runs:
        run.other_plan = run.other_plan or older.task_file
    return runs


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
