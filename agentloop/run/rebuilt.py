"""Progress that survives the loss of `.agent-loop/`: each task's commit names its plan and task
in trailers, and a run that finds no state reads what is done back from the history it builds on
(agentloop.state.landed), saying so in one line, so it never pays for a finished task again (one
you reverted since stays done, as in the checkout that ran it, until `--task N --again`; nor
does a run whose plan's edit added a task history holds: one deleted when done, put back); and
a run that finds a finished task's change gone from it looks for it there by its trailers
(what `--status` says of the same, it asks agentloop.state.whereabouts)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from agentloop.files.shown import typed_path
from agentloop.proc.beside import beside
from agentloop.state.landed import done_tasks, trailers
from agentloop.state.project import Project
from agentloop.state.schema import State, TaskState
from agentloop.vcs.branch_log import branch_history, git_history, jj_changes
from agentloop.vcs.carry import plan_slug
from agentloop.vcs.rewritten import rewritten

if TYPE_CHECKING:
    from agentloop.options.record import RunOptions
    from agentloop.run.context import Run


def task_trailers(project: Project, task: TaskState) -> str:
    """`Agent-Loop-Plan` and `Agent-Loop-Task` for a task's commit or change description."""
    return trailers(plan_slug(project.task_file_name), task.index, task.task)


def trailers_of(run: Run, task: TaskState) -> str:
    """The lines that end the task's commit message, naming its plan and the task."""
    return run.job.trailers(task) if run.job is not None else task_trailers(run.project, task)


def history_kind(asked: str, root: Path) -> str:
    """Whose history to read: the VCS asked for, or for `auto` the repository's own kind. A
    git repository a jj run is about to make colocated (no `.jj` yet) holds git's history only:
    read as jj's, before jj's repository exists, it named nothing done."""
    jj, git = (root / ".jj").is_dir(), (root / ".git").exists()
    if asked == "jj" and not jj and git:
        return "git"
    if asked != "auto":
        return asked
    return "jj" if jj else "git" if git else "none"


History = Callable[[], list[tuple[str, str, str]]]


def asks_history(options: RunOptions) -> bool:
    """Whether a run that finds no state reads what history says is done: not when it starts
    over (--reset), rehearses, or keeps no history (--vcs none)."""
    return not (options.reset or options.rehearse) and options.vcs != "none"


def read_history(project: Project, vcs: str) -> History:
    """The history from_history reads, started now (one command that changes nothing): a run
    that finds no state parses its plan meanwhile. git's command runs beside with no thread
    (agentloop.vcs.branch_log.git_history), jj's in a thread of its own. Waiting for it twice
    gives the same answer."""
    kind = history_kind(vcs, project.root)
    if kind != "git":
        return beside(partial(branch_history, kind, project.root), "agent-loop history")
    read = git_history(project.root)
    found: list[list[tuple[str, str, str]]] = []

    def history() -> list[tuple[str, str, str]]:
        if not found:
            found.append(read())
        return found[0]
    return history


def from_history(project: Project, state: State, vcs: str,
                 read: History | None = None) -> str | None:
    """Mark done the tasks whose change is in the history (a fresh state only); the one line
    that says so, or None when history names none. `read`: the history as read_history reads
    it, when it was started before."""
    history = read() if read is not None else \
        branch_history(history_kind(vcs, project.root), project.root)
    if not history:
        return None
    # Only once the history holds a change of agent-loop's (most fresh runs' does not):
    # not on their way to the first agent.
    from agentloop.state.landed import landings
    from agentloop.state.whereabouts import commits, planned

    # A task you reverted stays done until you ask, in a fresh clone as in the checkout that
    # ran it (whose records say it is done): run again here, it was paid for again.
    landed = landings(plan_slug(project.task_file_name), planned(state), commits(history))
    if not landed:
        return None
    # The task records' writer, loaded only now: read_history starts its git before it is needed.
    from agentloop.run import ledger

    change_of = {commit: change for commit, change, _ in history}
    for index, (commit, _) in landed.items():
        task = state.tasks[index - 1]
        if task.status == "pending":
            ledger.found_done(task, change_of[commit], commit)
    reverted = [f"task {i} by {r[:12]}" for i, (_, r) in landed.items() if r]
    since = f"; reverted since: {', '.join(reverted)}, kept done as the checkout that ran " \
            "them keeps them" if reverted else ""
    return (f"no state for this plan: {len(landed)} task(s) found done in the history this run "
            f"builds on (their commits name them{since}); they are not run again "
            f"(`--task N --again` runs one)")


def readded(project: Project, state: State, added: tuple[int, ...], vcs: str) -> list[str]:
    """Of the tasks an edit of the plan added (agentloop.state.reconcile), those whose change
    the history holds and did not revert since, marked done as from_history marks them: a done
    task deleted from the plan and put back is not paid for again. One line for each. Asked
    only when the edit added a task: a run whose plan added none starts no process here."""
    history = branch_history(history_kind(vcs, project.root), project.root)
    landed = _done(project, state, history) if history else {}
    found = [(i, landed[i]) for i in added
             if i in landed and state.tasks[i - 1].status == "pending"]
    if not found:
        return []
    from agentloop.run import ledger  # the task records' writer, as in from_history

    change_of = {commit: change for commit, change, _ in history}
    lines = []
    plan = typed_path(project.shown(project.task_file))
    for index, commit in found:
        ledger.found_done(state.tasks[index - 1], change_of[commit], commit)
        lines.append(f"task {index}: done already in {change_of[commit][:12]} (history); not "
                     f"run again (`agent-loop {plan} --task {index} "
                     "--again` runs it)")
    return lines


def named_by_jj(state: State, root: Path) -> None:
    """jj's change ids for the finished tasks recorded by a git commit id (git's change id is
    its commit id): those from_history and readded found done in git's history when a jj run
    read it before jj's repository was made from it (history_kind). Asked once jj's repository
    holds them (the jj backend's prepare), by one jj command, and only when a record is such:
    by git's id, a task's change that jj rewrites later (a rebase, `jj metaedit`) was taken
    for another task's, or for lost."""
    by_git = [t for t in state.tasks if t.change_id and t.change_id == t.commit_id]
    if not by_git:  # a jj run's own records: its change ids are never its commit ids
        return
    from agentloop.state.whereabouts import git_commit  # only for such a record, as _done

    by_git = [t for t in by_git if git_commit(t.change_id)]
    found = jj_changes(root, [t.change_id or "" for t in by_git])
    from agentloop.run import ledger  # the task records' writer, as in from_history

    # A commit jj does not hold (reset or rewritten away with git before jj took git's in) is
    # recorded so (jj_lacks) and never asked after again; one jj could not answer for, next run.
    for task in by_git:
        if (commit := task.commit_id or "") in found:
            ledger.renamed(task, found[commit])


def done_in_history(project: Project, state: State, kind: str) -> frozenset[int]:
    """The numbers of the plan's tasks whose change the history (`kind`: git or jj) holds and
    did not revert since, every trailer pair of a squash merge counted: what a fleet job's
    `Depends on:` counts as landed."""
    return frozenset(_done(project, state, branch_history(kind, project.root)))


def _done(project: Project, state: State, history: list[tuple[str, str, str]]) -> dict[int, str]:
    """Each plan task the history holds, not reverted since: its number and its commit."""
    # Only once the history holds a change of agent-loop's (most fresh runs' does not):
    # not on their way to the first agent.
    from agentloop.state.whereabouts import commits, planned

    return done_tasks(plan_slug(project.task_file_name), planned(state), commits(history))


def moved_on(state: State, kind: str, root: Path, lost: set[str], rev: str = "HEAD"
             ) -> list[tuple[TaskState, str, str]]:
    """The finished tasks whose change (among `lost`, gone from the history at `root`, read
    back from `rev`) is on it under another id, rewritten (agentloop.vcs.rewritten): (task, its
    change id, its commit id). A commit of the task's earlier attempts is never it."""
    tasks = [t for t in state.tasks if t.change_id in lost]
    # jj's change ids are the same after a rewrite: the commit is what was rewritten.
    was = {t.index: t.commit_id if kind == "jj" else t.change_id for t in tasks}
    skip = {i for t in tasks for a in t.history for i in (a.change_id, a.commit_id)
            if i and i not in (t.change_id, t.commit_id)}
    moved = rewritten(kind, root, [c for c in was.values() if c], rev, skip)
    return [(t, *moved[c]) for t in tasks if (c := was[t.index]) and c in moved]
