"""`agent-loop PLAN --integrate --from REMOTE`: every finished group's job brought onto the
current branch, in the plan's order, one commit (or jj change) per task, and the groups' states
merged into this clone's, so `--status` shows every task and the total cost.

Each task's commit is replayed onto the main line as a local parallel run lands its tasks
(agentloop.vcs.git.mainline, run.conflicts): a cherry-pick in the group's worktree, committed with
the task commit's author, date and message plus trailers naming the job's commit, then landed by
compare-and-swap. Those trailers make a second run a no-op, in this clone or in a clone of the
branch this one pushed later (a later stage integrates again). A conflict goes to a fresh agent
session given the task, its diff and the other groups' changes (the job's own session stayed on
the job's machine); unresolved, the task is `conflicted` and its work stays on the group's
branch, with the commands to go on. Nothing is pushed: the workflow decides what to do.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentloop.errors import VcsError
from agentloop.fleet.replay import GroupReplay
from agentloop.options.record import RunOptions
from agentloop.plan import groups
from agentloop.plan.parse import TaskFile
from agentloop.run.events import Emit
from agentloop.run.lane_tag import LaneNote
from agentloop.state import receipts
from agentloop.state.project import Project, load_plan
from agentloop.state.schema import State, TaskState, from_bytes
from agentloop.state.status import KEPT, SETTLED, check
from agentloop.state.status import TaskStatus as S
from agentloop.vcs import carry
from agentloop.vcs.choose import open_main_line
from agentloop.vcs.lanes import lane_name


@dataclass(frozen=True)
class GroupReport:
    """What became of one group."""

    number: int
    name: str
    branch: str
    outcome: str        # landed | not run | never ran | unfinished | conflicted | other plan
    landed: int = 0     # tasks this run put on the main line
    already: int = 0    # tasks found there already
    detail: str = ""


@dataclass(frozen=True)
class Integrated:
    """An integration's result: each group's report, the total cost, and the state."""

    project: Project
    state: State
    onto: str
    groups: tuple[GroupReport, ...]
    cost_usd: float
    cost_known: bool
    budget: float | None
    remote: str = ""    # where the jobs push (--from), for the command that runs one

    @property
    def unfinished(self) -> bool:
        """Whether some group's work is not on the main line for a reason a person must see."""
        return any(g.outcome in ("unfinished", "conflicted", "other plan", "never ran")
                   for g in self.groups)


def integrate(project: Project, plan: TaskFile, options: RunOptions, emit: Emit) -> Integrated:
    """Fetch, land every finished group in order, merge the states, save."""
    remote = options.from_remote or ""
    repo = carry.open_repo(project.root)
    carry.refuse_shallow(repo)
    carry.check_remote(repo, remote)
    carry.fetch(repo, remote)
    state, _, _ = load_plan(project, plan)
    state.vcs = state.vcs or repo.kind
    # Your own edits on a file a task changes would make a landing wait; here that stops the
    # integration instead (saying which files), since nobody may be there to commit them.
    main = open_main_line("git", project.root, on_wait=lambda text: emit(LaneNote(text)),
                          stopping=lambda: True, ref=onto_ref(repo))
    names = groups.in_order([t.group for t in plan.tasks])
    slug = carry.plan_slug(project.task_file_name)
    landed = carry.sources(repo, main.ref)
    reports = []
    for number, name in enumerate(names, 1):
        lane = lane_name(number, name)
        job = _job_state(repo, remote, carry.state_branch(slug, lane), state)
        branch = carry.work_branch(slug, lane)
        if job is None or isinstance(job, str):
            reports.append(GroupReport(number, name, branch, "other plan" if job else "not run",
                                       detail=job or ""))
            continue
        state.agent = state.agent or job.agent
        mine = [t for t in job.tasks if t.group == name]
        replay = GroupReplay(project, state, options, emit, main, repo, lane, name, slug)
        reports.append(_group(replay, number, branch, mine, landed))
    reports = _never_ran(reports, names, plan)
    if repo.kind == "jj":
        _jj_follow(repo, main.ref.removeprefix("refs/heads/"), state)
    project.store.save(state)
    # The merged state's total, counted as --status counts it: the jobs' runs, this
    # integration's conflict sessions, and whatever this clone's plan had spent before.
    total = receipts.of_state(state)
    return Integrated(project, state, main.ref.removeprefix("refs/heads/"), tuple(reports),
                      total.cost_usd, total.cost_known, options.budget, remote)


def _never_ran(reports: list[GroupReport], names: Sequence[str], plan: TaskFile
               ) -> list[GroupReport]:
    """A group with no job on the remote is not run yet when a later stage holds it (its jobs
    start from this integration); of the first stage, or of one whose jobs or a later one's ran,
    its job never ran, which an integration that exits 0 would pass over as a success."""
    from agentloop.plan.depends import waves  # only for the stages of an integration

    stage = {g: n for n, wave in enumerate(waves(names, dict(plan.depends)), 1) for g in wave}
    ran = [stage[r.name] for r in reports if r.outcome != "not run"]
    why = "though its stage's jobs ran" if ran else "and its stage is the first"
    return [replace(r, outcome="never ran", detail=f"no {r.branch} on the remote, {why}")
            if r.outcome == "not run" and stage[r.name] <= max(ran, default=1) else r
            for r in reports]


def onto_ref(repo: carry.Repo) -> str:
    """The branch the groups land on: git's current branch; jj's one bookmark on `@-`."""
    if repo.kind == "jj":
        if not (repo.root / ".git").exists():
            raise VcsError("--integrate lands with git beside jj: run it in a colocated jj "
                           "repository (`jj git init --colocate`), or a git clone")
        out = repo.jj("log", "--no-graph", "-r", "@-", "-T",
                      'local_bookmarks.map(|b| b.name()).join("\\n")')[1]
        names = [n for n in out.split() if n]
        if len(names) != 1:
            raise VcsError("--integrate lands on the bookmark of the working copy's parent: "
                           "`jj new main` (or `jj bookmark set main -r @-`) first"
                           + (f" (it has {', '.join(names)})" if names else ""))
        return f"refs/heads/{names[0]}"
    code, out = repo.git("symbolic-ref", "-q", "HEAD", codes=(0, 1))
    if code:
        raise VcsError("--integrate lands on the current branch, and HEAD is detached: "
                       "`git switch <branch>` first")
    return out.strip()


def _job_state(repo: carry.Repo, remote: str, branch: str, state: State) -> State | str | None:
    """The state a group's job pushed; None when it never pushed one; a reason when it is the
    state of another version of the plan."""
    found = carry.tip(repo, f"refs/remotes/{remote}/{branch}")
    text = carry.read_file(repo, found, carry.STATE_FILE) if found else None
    if text is None:
        return None
    job = from_bytes(text.encode("utf-8"), repo.root / carry.STATE_FILE)
    if job.task_file_hash != state.task_file_hash:
        return (f"its job ran another version of {state.task_file}: run the group again "
                "from this plan")
    return job


def _group(replay: GroupReplay, number: int, branch: str, tasks: list[TaskState],
           landed: dict[str, str]) -> GroupReport:
    """Merge a group's records; land its tasks when the group is finished."""
    name, state = replay.name, replay.state
    finished = all(t.status in SETTLED or (t.optional and t.status == S.PENDING) for t in tasks)
    here = {t.index: state.tasks[t.index - 1] for t in tasks}
    if not finished:
        for t in tasks:
            _not_here(state, t, "done by its job, but its group is not finished")
        left = sum(1 for t in tasks if t.status not in SETTLED)
        return GroupReport(number, name, branch, "unfinished",
                           detail=f"{left} of {len(tasks)} tasks not done: re-run its job")
    count, already = 0, 0
    for t in tasks:
        source = t.commit_id or t.change_id
        if t.status not in KEPT or not source:
            state.tasks[t.index - 1] = copy.deepcopy(t)
            continue
        if source in landed:
            record = copy.deepcopy(t)
            record.change_id = record.commit_id = landed[source]
            state.tasks[t.index - 1] = record
            already += 1
            continue
        kept = here[t.index] if here[t.index].status == S.CONFLICTED else None
        record = copy.deepcopy(t)
        state.tasks[t.index - 1] = record
        if kept is not None:  # an earlier integration left it for a person
            record.history = kept.history
        sha = replay.land(record, source, kept is not None)
        if sha is None:
            for later in tasks[tasks.index(t) + 1:]:
                _not_here(state, later, f"waits for task {t.index} to land (conflicted)")
            replay.close(keep=True)
            return GroupReport(number, name, branch, "conflicted", count, already,
                               record.error or "")
        record.change_id = record.commit_id = sha
        record.status, record.error = t.status, t.error
        landed[source] = sha
        count += 1
        replay.save(record)
    replay.close(keep=False)
    return GroupReport(number, name, branch, "landed", count, already)


def _not_here(state: State, task: TaskState, why: str) -> None:
    """A job's record whose work is not on the main line: in --status with its attempts and
    costs, done work shown as pending (with why) until it lands."""
    record = copy.deepcopy(task)
    record.change_id = record.commit_id = None
    if record.status in KEPT:
        record.status, record.error = check(record.status, S.PENDING, record.index), why
    state.tasks[task.index - 1] = record


def _jj_follow(repo: carry.Repo, bookmark: str, state: State) -> None:
    """jj: the landed commits imported, the working copy moved onto them, and each landed
    task's record naming its jj change."""
    repo.jj("git", "import")
    repo.jj("rebase", "-s", "@", "-d", bookmark)
    for task in state.tasks:
        if task.status in KEPT and task.commit_id:
            code, out = repo.jj("log", "--no-graph", "-r", task.commit_id, "-T", "change_id",
                                codes=(0, 1))
            if code == 0 and out.strip():
                task.change_id = out.strip()

