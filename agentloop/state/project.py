"""Where a run lives and which tasks it has: the project root, its store, and the task list.

The markdown is parsed once per version of the task file: when state.json holds the same file
hash, the tasks come from the state (marko costs about 0.5 ms a task; a 10,000-task file would
take seconds to parse on every --status). When the hash changed, the saved records are
reconciled with the new file (agentloop.reconcile) instead of refused.

Each task file is a plan with its own folder: the first plan of a repository keeps
`.agent-loop/` itself (where every earlier version of agent-loop kept its one plan), every other
plan gets `.agent-loop/plans/<name>-<hash>/`. One run at a time per repository still holds.
A plan renamed (`git mv tasks.md plan.md`) takes over the state of its old name, whose file is
gone (open_project), so what it finished is not paid for again.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.errors import AgentLoopError, StateError, TaskFileError
from agentloop.files import regular
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.plan import source
from agentloop.state import plain
from agentloop.state.runlock import running
from agentloop.state.schema import State, TaskState, loads
from agentloop.state.store import Store
from agentloop.vcs import STATE_DIR, find_root

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
    no state of its own reads the state of the plan it was renamed from (_renamed_from); a run
    (`take_over`) makes that state its own, moving its folder, while no other run goes (one of
    the old plan's would find its folder gone): `--status` and `--dry-run` change nothing."""
    path, root = plain.locate(task_file, cwd)
    folder, read = plan_folder(root, path)
    former = older = ""
    older_dir = None
    if (folder / "state.json").exists():
        other = _named_other(root, path, folder)
        if other is not None:   # another plan's, a run of it killed before it moved it
            folder, read = _given_back(root, path, folder, other, take_over), None
    if not (folder / "state.json").exists():
        found = _renamed_from(root, path)
        if found is not None:
            (folder, former), read = found, None
            if take_over and not running(root, root / STATE_DIR):
                folder = _moved_to_own(root, path, folder)
    else:
        over = _renamed_over(root, path, folder)
        if over is not None:
            own, (folder, former), read = folder, over, None
            older, older_dir = "is archived by the plan's next run", own
            if take_over and not running(root, root / STATE_DIR):
                archived = _archived(root, own, folder)
                moved = _moved_to_own(root, path, folder)
                if moved != folder and archived.is_relative_to(folder):
                    archived = moved / archived.relative_to(folder)   # went along
                older, older_dir = f"is archived in {plain.relative(archived, root)}/", archived
                folder = moved
            older += f"; its cost still counts in {plain.plan_name(root, path)}'s totals"
    return Project(path, root, Store(root, folder, read), cwd.resolve(), former, older,
                   older_dir)


def _renamed_over(root: Path, task_file: Path, own: Path) -> tuple[Path, str] | None:
    """The folder (and former name, "" when unknown) of another plan's state that is this
    plan's now, though it has a state of its own: the plan was renamed over this one (`mv a.md
    b.md`, b.md having run). A state saved under this plan's name by the run the rename came
    in (agentloop.run.plan_kept), else the state of a plan whose file is gone made from this
    very file (its hash); never while the own state was made from the file as it is (then
    nothing came over it). One folder to look at (the common case) reads nothing."""
    folders = [f for f in plain.plan_folders(root) if f != own]
    if not folders:
        return None
    try:
        digest = source.read(task_file).sha256
        # The plan as its own state was made from it (the usual case): no JSON parsed.
        if digest.encode() in regular.read_bytes(own / "state.json"):
            return None
    except (TaskFileError, OSError):
        return None
    mine = _top(own)
    if not isinstance(mine, dict) or mine.get("task_file_hash") == digest:
        return None
    name = plain.plan_name(root, task_file)
    named, same = [], []
    for folder in folders:
        data = _top(folder)
        former = data.get("task_file") if isinstance(data, dict) else None
        if not isinstance(former, str) or not former:
            continue
        if former == name:
            named.append((folder, "", data.get("task_file_hash") == digest))
        elif data.get("task_file_hash") == digest and not (root / former).exists():
            same.append((folder, former))
    if named:
        exact = [(f, n) for f, n, alike in named if alike]
        pick = exact if exact else [(f, n) for f, n, _ in named]
        return pick[0] if len(pick) == 1 else None
    return same[0] if len(same) == 1 else None


def _named_other(root: Path, task_file: Path, folder: Path) -> str | None:
    """The other plan whose state is in this plan's folder, its file there: a run of this plan
    renamed while it worked (`mv plan.md sub/plan.md`) saved its state under the new name, and
    was killed (kill -9, a power cut) before it moved that state to the new name's folder at its
    end (Store._follow_rename). None when the state is this plan's (or names a plan that is
    gone: a rename of it, this plan's to take over). Read in full only when the state may name
    another: its journal holds lines (a run killed, or working), or state.json does not name
    this plan; a state a run ended with and that names this plan costs one read of its bytes."""
    import json
    import re

    name = plain.plan_name(root, task_file)
    try:
        raw = regular.read_bytes(folder / "state.json")
        journal = (folder / "state.journal").stat().st_size if \
            (folder / "state.journal").exists() else 0
    except OSError:
        return None
    said = re.escape(json.dumps(name).encode())
    if not journal and re.search(rb'"task_file":\s*' + said, raw):
        return None
    data = _top(folder)
    former = data.get("task_file") if isinstance(data, dict) else None
    if not isinstance(former, str) or not former or former == name:
        return None
    return former if (root / former).exists() else None


def _given_back(root: Path, task_file: Path, folder: Path, other: str, take_over: bool) -> Path:
    """This plan's folder when `folder` holds `other`'s state (_named_other): a run moves that
    state to `other`'s own folder, as the killed run would have, and this plan starts with none
    of it (it never takes a plan's state whose file is there); `--status` and `--dry-run` move
    nothing, and read no state for this plan. The first plan's `.agent-loop/` stays `other`'s
    (its state names it), this plan taking a folder of its own."""
    own = plain.own_folder(root, task_file)
    if folder != own:
        return own
    if not take_over:
        return own / "unclaimed"   # never made: nothing is written by a look
    target = plain.own_folder(root, root / other)
    if running(root, root / STATE_DIR):
        return folder   # that run holds the repository: this one is refused by the lock
    try:
        if target.exists():
            raise FileExistsError(target)
        os.rename(folder, target)
    except OSError:
        raise StateError(f"{plain.relative(folder, root)}/ holds the state of {other} (a run "
                         f"of it was killed before it moved it to {plain.relative(target, root)}"
                         f"/): run `agent-loop {other}` first, or move it aside") from None
    return own


def _top(folder: Path) -> Any:
    """The state in `folder` as JSON, with the top-level fields its journal changed since
    (the plan's name, a run saved under a new name mid-run), None when it cannot be read."""
    try:
        data = loads(regular.read_bytes(folder / "state.json"), folder / "state.json")
    except (OSError, StateError):
        return None
    if not isinstance(data, dict) or data.get("journal_id") is None:
        return data
    try:
        raw = regular.read_bytes(folder / "state.journal")
    except OSError:
        return data
    for line in plain.journal_lines(raw, data["journal_id"], plain.loads_line):
        top = line.get("top")
        if isinstance(top, dict):
            data.update({k: v for k, v in top.items() if k in ("task_file", "task_file_hash")})
    return data


def _archived(root: Path, own: Path, folder: Path) -> Path:
    """The older state in `own` moved aside as --reset moves a state (its records, logs and
    events in `archive/<stamp>/`), for the state in `folder` to take its place: where it went.
    A plan's own folder goes whole into the archive of the state that replaces it (which then
    takes the folder's name); the first plan's `.agent-loop/` keeps its archive itself."""
    from agentloop.state.schema import now

    stamp = now().replace(":", "")
    if own == root / STATE_DIR:
        archived = Store(root, own).archive(stamp)
        return archived if archived is not None else own
    target, n = folder / "archive" / stamp, 1
    while target.exists():   # a --reset of the same second
        n += 1
        target = target.with_name(f"{stamp}-{n}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(own, target)
    except OSError as exc:
        raise StateError(f"cannot move {plain.relative(own, root)} aside to "
                         f"{plain.relative(target, root)}: {exc.strerror}") from None
    return target


def _renamed_from(root: Path, task_file: Path) -> tuple[Path, str] | None:
    """The folder and name of the plan this one was renamed from (`git mv tasks.md plan.md`),
    whose state is this plan's: a plan whose file is gone, whose state was made from this very
    file (its hash), else whose tasks are all in this file with a few more (renamed, then
    added to). Never a plan whose file is still there (a copy kept beside it has its own
    state), and no guess between two that fit alike. A state that already names this plan
    (taken over, and its folder could not be renamed) is this plan's first."""
    name = plain.plan_name(root, task_file)
    gone = []
    for folder in plain.plan_folders(root):
        data = _top(folder)   # the one reader of which plan a state names (_renamed_over's)
        if not isinstance(data, dict):
            continue
        former = data.get("task_file")
        if former == name:
            return folder, ""
        if isinstance(former, str) and former and not (root / former).exists():
            gone.append((folder, former, data))
    if not gone:
        return None
    try:
        plan = source.read(task_file)
    except TaskFileError:
        return None
    same = [(f, n) for f, n, data in gone if data.get("task_file_hash") == plan.sha256]
    if same:
        return same[0] if len(same) == 1 else None
    from collections import Counter

    from agentloop.plan import parse
    from agentloop.plan.boxes import task_key

    try:
        now = Counter((t.group, task_key(t.text)) for t in parse.parsed(plan).tasks)
    except AgentLoopError:
        return None
    alike = []
    for folder, former, data in gone:
        records = data.get("tasks")
        was = Counter((str(t.get("group", "")), task_key(str(t.get("task", "")))) for t in records
                      if isinstance(t, dict)) if isinstance(records, list) else Counter()
        # Every task of the old plan still here, in its group and in its words, and only a
        # task or two more (a fifth of its count at most): a plan renamed, then added to. A new
        # plan that repeats some lines of a finished one (run the tests, update the changelog)
        # is not it: its tasks run.
        added = sum((now - was).values())
        if was and not was - now and added <= max(1, sum(was.values()) // 5):
            alike.append((folder, former))
    return alike[0] if len(alike) == 1 else None


def _moved_to_own(root: Path, task_file: Path, folder: Path) -> Path:
    """A taken-over state's folder, renamed to the one this plan's name gives it (so that a
    new plan by the old name starts afresh); the first plan's `.agent-loop/` stays where it is
    (its state records the new name when it is next saved), as does a folder that cannot be
    renamed."""
    own = plain.own_folder(root, task_file)
    if folder == own or folder == root / STATE_DIR:
        return folder
    try:
        own.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, own)
    except OSError:
        return folder
    return own


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
    fresh = state_from(project, parsed)
    saved.tasks, saved.task_file_hash = changes.tasks, parsed.sha256
    saved.context, saved.ignored, saved.warnings = fresh.context, fresh.ignored, fresh.warnings
    saved.depends = fresh.depends
    saved.folded, saved.reader, saved.title = fresh.folded, fresh.reader, fresh.title
    saved.retired += [run for record in changes.dropped for run in record.history]
    if reread:   # news only if it reads differently
        return saved, True, dataclasses.replace(changes, reread=True) if changes.news() else None
    return saved, True, changes


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
