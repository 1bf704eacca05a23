"""Where a plan stands (`--status`), and where every plan of a repository stands (`--status`
without a plan): read from the state file, told apart from the history only when that moved.

Its own module, apart from the core operations (agentloop.app), because a user types it while
a plan runs and waits for every module it loads: an unchanged plan's state is read as plain
records (agentloop.state.plain), with none of the state's record classes, the run, the plan's
reader or the process layer (tests/cli/test_startup.py holds the list); any other state by the
full reader, which says the same of it.
"""

from __future__ import annotations

from agentloop.errors import StateError, TaskFileError
from agentloop.files.pid_file import live_pid
from agentloop.plan import source
from agentloop.state import plain, tally
from agentloop.state.status import as_left_by_a_dead_run
from agentloop.vcs import STATE_DIR, find_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.state.project import Project
    from agentloop.state.schema import State
    from agentloop.state.whereabouts import Found

    # Found, and where the tasks landed when your checkout left that branch (StatusView's).
    Placed = tuple[tuple[int, ...], tuple[tuple[int, str], ...], tuple[tuple[int, str], ...],
                   tuple[str, str | None] | None]


class StatusView:
    """--status: the recorded state, and a note about it (no run yet, a changed file).

    A plain class, not a dataclass: `--status` of an unchanged plan loads no dataclasses."""

    __slots__ = ("root", "state", "note", "lost", "moved", "reverted", "elsewhere", "unstarted")

    def __init__(self, root: Path, state: State, note: str | None, lost: tuple[int, ...] = (),
                 moved: tuple[tuple[int, str], ...] = (),
                 reverted: tuple[tuple[int, str], ...] = (),
                 elsewhere: tuple[str, str | None] | None = None,
                 unstarted: frozenset[str] = frozenset()) -> None:
        self.root = root              # the project's: what the state's paths are from
        self.state = state
        self.note = note
        self.lost = lost              # finished tasks whose change is gone from the history
        self.moved = moved            # (task, its change now): rebased, trailers kept
        self.reverted = reverted      # (task, the commit that reverts it)
        # git: (the branch the tasks landed on, the one your checkout is on, None: detached)
        # when you switched away from it: their changes were looked for there.
        self.elsewhere = elsewhere
        # (task, attempt number) of the runs a stop ended before their agent said a word.
        self.unstarted = unstarted


def status(tasks_md: Path, cwd: Path, rehearsal: bool = False) -> StatusView:
    """Where each task stands (in the last rehearsal, with `rehearsal`); reads the state without
    the run lock (writes are atomic)."""
    if not rehearsal:
        path, root = plain.locate(tasks_md, cwd)
        folder, read = plain.plan_folder(root, path, plain.loads)
        # Read first, as the full reader does: a plan that is gone is said so either way.
        try:
            plan_hash = source.file_hash(source.read_bytes(path))
        except TaskFileError:
            from agentloop.state.plan_copy import said_if_kept
            from agentloop.state.project import open_project

            said_if_kept(open_project(tasks_md, cwd))  # gone: where the last run kept it
            raise
        state = plain.load(folder, plan_hash, read)
        if state is not None:
            return StatusView(root, state, None,
                              *_found(root, plain.relative(path, root), state, root / STATE_DIR),
                              unstarted=unstarted(root, state))
    return _read_in_full(tasks_md, cwd, rehearsal)


def _read_in_full(tasks_md: Path, cwd: Path, rehearsal: bool) -> StatusView:
    """status, by the full reader: a new, changed, old or damaged plan's state."""
    _load_full_reader()
    from agentloop.state.project import load_plan, open_project, rehearsal_of

    project = open_project(tasks_md, cwd)
    if rehearsal:
        project = rehearsal_of(project)
    try:
        state, saved, changes = load_plan(project)
        if not saved:
            _in_a_lane(project.root, project.task_file_name)
        note = ("no run yet" if not saved else
                changes.note(project.task_file_name, " since the last run")
                if changes is not None else None)
        if not saved and not rehearsal:
            note = "\n".join(n for n in (note, _from_history(project, state)) if n)
    except StateError as exc:
        # A changed task file still lets the user see what the last run did.
        recorded = project.store.load()
        if recorded is None:
            raise
        state, note, saved = recorded, f"warning: {exc}", True
    if saved and changes is not None and changes.added and not rehearsal:
        note = "\n".join(n for n in (note, *_readded(project, state, changes.added)) if n)
    history: Path | None = project.root
    name = project.task_file_name
    if rehearsal and saved:   # its changes are in its own copy's history, never the user's
        from agentloop.run.rehearsal import where_changes_are

        copy, where = where_changes_are(project, state.vcs or "")
        history, name = (copy.root, copy.task_file_name) if copy else (None, name)
        note = "\n".join(n for n in (note, where) if n)
    return StatusView(project.root, state, note,
                      *_found(history, name, state, project.store.base),
                      unstarted=unstarted(project.root, state))


def _in_a_lane(root: Path, plan: str) -> None:
    """StateError when `root`, with no run of its own, is a lane of agent-loop's (a person
    who went there as a conflict's `cd` says, an agent in its own): its plan is the copy its
    branch holds, which no run records, so "no run yet" would be said of a plan under way."""
    from agentloop.files.shown import typed_path
    from agentloop.vcs.lanes import LANES

    if root.parent.name != LANES or root.parent.parent.name != STATE_DIR:
        return
    outer = root.parent.parent.parent
    command = f"agent-loop {typed_path(outer / plan)} --status"
    raise StateError(f"{root} is a lane of agent-loop's run in {outer}: `{command}` shows "
                     "where each task stands")


def unstarted(root: Path, state: State) -> frozenset[str]:
    """The logs (each run's own, so one names one record) of the agent runs a stop (Ctrl+C, a
    kill) ended before their agent said a word: its stream log (the .jsonl beside its log)
    empty or never made, its log there. No agent ran, so nothing was spent: their cost is
    taken as known (nothing), and they are no run of their task (--status shows it so; the
    records on disk stay as they are, and a run's own closing line goes by them). One or two
    stats each, of such runs alone: a run that reported a cost or an exit is never looked
    at."""
    found = set()
    # Keyed by log, not by (task, attempt number): an attempt's developer run, its second
    # run, its reviewers' and fixes' share that number, and a stopped one hid them all.
    for runs in [t.history for t in state.tasks] + [state.retired]:
        for a in runs:
            if a.cost_known or a.exit_code is not None or a.usage or a.cost_usd or \
                    not a.log or not a.log.endswith(".log"):
                continue
            log, said = root / a.log, None
            try:
                said = (log.with_suffix(".jsonl")).stat().st_size
            except OSError:
                said = 0 if log.exists() else None  # its log deleted too: nothing known
            if said == 0:
                a.cost_known = True
                found.add(a.log)
    return frozenset(found)


def _found(history: Path | None, task_file: str, state: State, base: Path) -> Placed:
    """Where the finished tasks' changes are in the history at `history` (none: nowhere to
    look), and the branch they landed on when your checkout left it (git: they are looked for
    there); a task a dead run left running is said to be interrupted (`base`: the store's)."""
    from agentloop.state.whereabouts import NOTHING, whereabouts
    from agentloop.vcs.history import elsewhere

    if live_pid(base / "run.pid") is None:
        as_left_by_a_dead_run(state.tasks)
    if not history:
        return (*NOTHING, None)
    away = elsewhere(history, state.history_mark) if state.vcs == "git" else None
    found: Found = whereabouts(history, task_file, state, away[0] if away else None)
    return (*found, away)


class PlanLine:
    """--status without a task file: one plan of the repository, in brief (a plain class, as
    StatusView is)."""

    __slots__ = ("task_file", "folder", "counts", "cost_usd", "cost_known", "error", "gone",
                 "cost_said")

    def __init__(self, task_file: str, folder: Path, counts: dict[str, int], cost_usd: float,
                 cost_known: bool, error: str | None = None, gone: bool = False,
                 cost_said: str | None = None) -> None:
        self.task_file = task_file      # as recorded, relative to the root
        self.folder = folder            # where its state lives
        self.counts = counts
        self.cost_usd = cost_usd
        self.cost_known = cost_known
        self.error = error              # why its state could not be read
        self.gone = gone                # its file is not there (deleted, or renamed)
        self.cost_said = cost_said      # the cost in words; None: no agent ran, nothing said


def overview(cwd: Path) -> tuple[Path, list[PlanLine]]:
    """Every plan that has run in the repository around `cwd`: the root, and one line each."""
    root = find_root(cwd.resolve()) or cwd.resolve()
    lines = []
    for folder in plain.plan_folders(root):
        try:
            state = plain.load(folder, None) or _load_in_full(root, folder)
        except StateError as exc:
            lines.append(PlanLine("?", folder, {}, 0.0, False, str(exc)))
            continue
        if state is None:
            continue
        if live_pid(root / STATE_DIR / "run.pid") is None:
            as_left_by_a_dead_run(state.tasks)  # first: a killed agent's cost is unknown
        silent = unstarted(root, state)
        total = tally.of_state(state)
        counts: dict[str, int] = {}
        for t in state.tasks:
            counts[str(t.status)] = counts.get(str(t.status), 0) + 1
        # One stat a plan: a plan deleted, or renamed and not yet taken over, is not listed
        # as if it were there.
        gone = not (root / state.task_file).exists()
        lines.append(PlanLine(state.task_file, folder, counts, total.cost, total.known,
                              gone=gone, cost_said=total.words()
                              if tally.agents_ran(state, silent) else None))
    return root, _one_each(root, lines)


def _one_each(root: Path, lines: list[PlanLine]) -> list[PlanLine]:
    """One line a plan: a plan renamed over another that had run (`mv a.md b.md` while a.md's
    run worked) has two states by one name; the one in the plan's own folder is the older,
    which the plan's next run archives (agentloop.state.project), so it is not listed; its
    cost is the plan's, as that run keeps it (so no money spent leaves every total)."""
    names = [line.task_file for line in lines if line.error is None]
    twice = {name for name in names if names.count(name) > 1}
    if not twice:
        return lines
    older = {plain.plan_folder(root, root / name, plain.loads)[0] for name in twice}
    shown = [line for line in lines if line.error is not None or line.task_file not in twice
             or line.folder not in older]
    for gone in lines:
        if gone.error is None and gone.task_file in twice and gone.folder in older:
            for line in shown:
                if line.error is None and line.task_file == gone.task_file:
                    _add_cost(line, gone)
    return shown


def _add_cost(line: PlanLine, more: PlanLine) -> None:
    """`more`'s cost counted in `line`'s, in the same words."""
    line.cost_usd = tally.usd(line.cost_usd + more.cost_usd)
    line.cost_known = line.cost_known and more.cost_known
    if more.cost_said is not None:
        line.cost_said = tally.money(line.cost_usd, line.cost_known) \
            if line.cost_usd or line.cost_known else more.cost_said


def _load_in_full(root: Path, folder: Path) -> State | None:
    """The state in `folder` by the full reader (its journal applied, an old one upgraded)."""
    _load_full_reader()
    from agentloop.state.store import Store

    return Store(root, folder).load()


def _readded(project: Project, state: State, added: tuple[int, ...]) -> list[str]:
    """Of the tasks the plan's edit added, those done already by their commit in the history
    (a done task deleted from the plan and put back): marked done here as the run marks them
    (agentloop.run.rebuilt.readded), so --status says what --dry-run says and the next run
    records, not "pending" (nothing is saved). Asked only when the edit added a task; a
    history that cannot be read leaves them as they are."""
    from agentloop.errors import AgentLoopError
    from agentloop.run.rebuilt import readded

    if not state.vcs or state.vcs == "none":
        return []
    try:
        return readded(project, state, added, state.vcs)
    except AgentLoopError:
        return []


def _from_history(project: Project, state: State) -> str | None:
    """A plan with no state (a fresh clone, `.agent-loop/` cleaned away): the tasks its history
    says are done, marked so here as a run marks them (agentloop.run.rebuilt.from_history),
    nothing saved, so --status says what --dry-run says, and a task you reverted since is said
    reverted, as in the checkout that ran it. A history that cannot be read says nothing."""
    from agentloop.errors import AgentLoopError
    from agentloop.run.rebuilt import from_history, history_kind

    kind = history_kind("auto", project.root)
    if kind == "none":
        return None
    try:
        line = from_history(project, state, kind)
    except AgentLoopError:
        return None
    if line is not None:
        state.vcs = kind  # whose history names the tasks' changes, where --status looks
    return line


def _load_full_reader() -> None:
    """Import the full reader with the stops held back: it loads orjson, and a stop inside a C
    extension's start can crash the interpreter (agentloop.__main__ says so), where the
    plain reader's `--status` leaves orjson unloaded while the stops wait."""
    from agentloop.proc.signals import deferred

    with deferred():
        import agentloop.state.project  # noqa: F401
