"""One group as a job of a CI matrix: `agent-loop PLAN --group G --push REMOTE`.

The job runs the group's tasks in order in its one session, in whatever clone the CI system
gave it, each task a commit (or jj change) of its own on the group's branch
(agentloop.vcs.carry names it). After every task it pushes that branch and the group's state
together, so a job that dies and is re-run, anywhere, fetches them first and goes on where the
last push left off: no task is done twice. Its budget (`--budget`) is its own: the state it
carries holds only its group's costs, and `--integrate` adds the groups up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from agentloop.errors import AgentLoopError, StateError, VcsError
from agentloop.files.shown import typed
from agentloop.options.record import RunOptions
from agentloop.plan import groups
from agentloop.plan.parse import TaskFile
from agentloop.proc.signals import shielded
from agentloop.run.events import Emit, RunFinished
from agentloop.run.rebuilt import done_in_history
from agentloop.run.selection import runnable
from agentloop.run.start import start_run
from agentloop.state import receipts
from agentloop.state.project import Project, load_plan
from agentloop.state.schema import State, TaskState, from_bytes
from agentloop.state.status import FINISHED, KEPT
from agentloop.vcs import carry
from agentloop.vcs.lanes import lane_name


@dataclass
class Job:
    """A group's job: where its work and its state go."""

    project: Project
    repo: carry.Repo
    remote: str
    group: str
    number: int
    work: str           # the group's branch
    plan: str           # the plan's part of branch names (carry.plan_slug)
    state_ref: str      # the branch its state.json travels on
    notes: list[str] = field(default_factory=list)
    # Sessions of a job that ran elsewhere (resumed from the remote): Claude Code keeps a
    # session as files under the home of the machine that ran it, so the next task starts a
    # fresh one, given the plan's preamble and the learnings that travel with the state.
    elsewhere: frozenset[str] = frozenset()
    # This plan's tasks whose commits, with their trailers, the history holds: another job's
    # group, integrated. What `Depends on:` asks of a group in this fresh clone.
    landed: frozenset[int] = frozenset()

    def push(self, state: State | None) -> None:
        """The group's branch and its state, to the remote, together."""
        if state is None:
            return
        if self.repo.kind == "jj":
            _current_commits(self.repo, [t for t in state.tasks if t.group == self.group])
        text = state.to_bytes().decode("utf-8")
        local = carry.tip(self.repo, f"refs/heads/{self.state_ref}")
        parent = local or carry.tip(self.repo, f"refs/remotes/{self.remote}/{self.state_ref}")
        if parent is None or carry.read_file(self.repo, parent, carry.STATE_FILE) != text:
            done = sum(1 for t in state.tasks if t.group == self.group and t.status in FINISHED)
            files = {carry.STATE_FILE: text, **self._learned()}
            carry.record(self.repo, self.state_ref, files,
                         f"agent-loop state: {self.group} ({done} done)", parent)
        branches = [self.state_ref]
        if self.repo.kind == "jj":
            last = [t.change_id for t in state.tasks
                    if t.group == self.group and t.status in KEPT and t.change_id]
            if last:
                self.repo.jj("bookmark", "set", self.work, "-r", last[-1], "--allow-backwards")
                branches.insert(0, self.work)
        else:
            branches.insert(0, self.work)
        carry.push(self.repo, self.remote, branches)

    def _learned(self) -> dict[str, str]:
        path = self.project.store.dir / LEARNINGS
        return {LEARNINGS: path.read_text(encoding="utf-8")} if path.is_file() else {}

    def trailers(self, task: TaskState) -> str:
        """`Agent-Loop-Plan` and `Agent-Loop-Task` lines: every commit on the group's branch
        names its task, whatever the state says."""
        return carry.task_trailers(self.plan, task.index)

    def nothing_left(self, state: State, options: RunOptions) -> bool:
        """Whether the group has no task left that a plain run would take."""
        return not any(runnable(t, options.max_attempts, options.include_optional)
                       for t in state.tasks if t.group == self.group)


LEARNINGS = "learnings.md"   # the agent's notes for later tasks: a fresh session reads them


def run_job(project: Project, plan: TaskFile, options: RunOptions, emit: Emit,
            ) -> tuple[State, RunFinished]:
    """--group G --push REMOTE: the group's run in this clone, its branch and state pushed
    after every task and once more at the end, however it ends."""
    # One group is one lane: a settings file's `parallel` is for local runs.
    options = replace(options, parallel=1)
    job = open_job(project, plan, options)
    state, _, _ = load_plan(project, plan)
    if job.nothing_left(state, options):
        job.push(state)
        summary = finished(job, state)
        emit(summary)
        return state, summary
    try:
        state, summary = start_run(project, plan, options, emit, job=job,
                                   first_notes=tuple(job.notes))
    except BaseException:
        with shielded():
            try:  # what the state says now travels too; the error that stopped the run wins
                job.push(project.store.load())
            except AgentLoopError:
                pass
        raise
    job.push(state)
    return state, summary


def open_job(project: Project, plan: TaskFile, options: RunOptions) -> Job:
    """The job's clone made ready: full history, the remote known, the group's branch and
    state fetched, and the clone on that branch where an earlier job left it."""
    remote = options.push or ""
    repo = carry.open_repo(project.root)
    carry.refuse_shallow(repo)
    carry.check_remote(repo, remote)
    names = groups.in_order([t.group for t in plan.tasks])
    name = groups.find([t.group for t in plan.tasks], options.group or "")
    number = names.index(name) + 1
    slug, lane = carry.plan_slug(project.task_file_name), lane_name(number, name)
    job = Job(project, repo, remote, name, number, carry.work_branch(slug, lane), slug,
              carry.state_branch(slug, lane))
    carry.fetch(repo, remote)
    _resume(job)
    # Read as a plain run reads what is done (every trailer pair of a squash merge, a revert
    # undoing), from the state as it stands after _resume brought back the group's own.
    job.landed = done_in_history(project, load_plan(project, plan)[0], "git")
    return job


def _resume(job: Job) -> None:
    """Start from the remote's branch when it is ahead of this clone's (a re-run job), else from
    this clone's own branch, else from where the clone is now."""
    repo, remote = job.repo, job.remote
    theirs = carry.tip(repo, f"refs/remotes/{remote}/{job.work}")
    mine = carry.tip(repo, f"refs/heads/{job.work}")
    if theirs is not None and mine is not None and not carry.is_ancestor(repo, theirs, mine) \
            and not carry.is_ancestor(repo, mine, theirs):
        raise VcsError(f"branch {job.work} here and on {remote} went separate ways: keep one "
                       f"(`git branch -D {typed(job.work)}` takes {remote}'s) and run again")
    adopt = theirs is not None and (mine is None or carry.is_ancestor(repo, mine, theirs))
    if repo.kind == "jj":
        if adopt:
            repo.jj("bookmark", "set", job.work, "-r", str(theirs), "--allow-backwards")
        start = job.work if (adopt or mine is not None) else None
        if start is not None:
            repo.jj("new", start)
    elif adopt:
        repo.git("checkout", "-q", "-B", job.work, str(theirs))
    elif mine is not None:
        repo.git("checkout", "-q", job.work)
    else:
        repo.git("checkout", "-q", "-b", job.work)
    if adopt:
        _restore_state(job)
        job.notes.append(f"resumed group {job.number} ({job.group}) from {remote}'s "
                         f"{job.work}")
    job.notes.append(f"each task a commit on {job.work}, pushed to {remote} with the group's "
                     f"state ({job.state_ref}) after every task")


def _restore_state(job: Job) -> None:
    found = carry.tip(job.repo, f"refs/remotes/{job.remote}/{job.state_ref}")
    text = carry.read_file(job.repo, found, carry.STATE_FILE) if found else None
    if text is None:
        return
    store = job.project.store
    state = from_bytes(text.encode("utf-8"), store.state_path)
    if state.task_file != job.project.task_file_name:
        raise StateError(f"{job.state_ref} on {job.remote} holds the state of "
                         f"{state.task_file}, not {job.project.task_file_name}")
    store.save(state)
    learned = carry.read_file(job.repo, found or "", LEARNINGS)
    if learned is not None:
        (store.dir / LEARNINGS).write_text(learned, encoding="utf-8")
    job.repo.git("update-ref", f"refs/heads/{job.state_ref}", found or "")
    job.elsewhere = frozenset(t.session_id for t in state.tasks
                              if t.group == job.group and t.session_id)


def _current_commits(repo: carry.Repo, tasks: list[TaskState]) -> None:
    """jj: each finished task's commit as it is now. A change keeps its id when jj rewrites it
    (the run's end drops the empty base change under the first task), its commit does not,
    and `--integrate` reads the commits."""
    for task in tasks:
        if task.status in KEPT and task.change_id:
            code, out = repo.jj("log", "--no-graph", "-r", task.change_id, "-T", "commit_id",
                                codes=(0, 1))
            if code == 0 and out.strip():
                task.commit_id = out.strip()


def finished(job: Job, state: State) -> RunFinished:
    """The summary of a job whose group had nothing left to run (it only pushed)."""
    total = receipts.total([t for t in state.tasks if t.group == job.group])
    counts = Counter(str(t.status) for t in state.tasks if t.group == job.group)
    return RunFinished(tuple(sorted(counts.items())), total.cost_usd, 0.0, "",
                       notes=(f"group {job.number} ({job.group}) has nothing left to run; its "
                              f"branch {job.work} and its state are on {job.remote}",),
                       cost_known=total.cost_known)
