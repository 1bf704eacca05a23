"""One group's task commits, made by a fleet job elsewhere, replayed onto the main line by
`--integrate` (agentloop.fleet.integrate): each one cherry-picked in the group's worktree onto the
main line as it is, committed as the job committed it (plus trailers naming the job's commit),
and landed (agentloop.vcs.git.mainline). Where it does not fit, the conflict handling of a local
parallel run (agentloop.run.conflicts) takes over, in a fresh session: the job's session is on
the job's machine."""

from __future__ import annotations

from typing import Any

from agentloop.agents import make_agent
from agentloop.files.shown import typed, typed_path
from agentloop.options.record import RunOptions
from agentloop.run import conflicts
from agentloop.run.context import Run
from agentloop.run.events import Emit
from agentloop.run.start import choose_agent, open_sandbox
from agentloop.state.learnings import Learnings
from agentloop.state.project import Project
from agentloop.state.schema import State, TaskState
from agentloop.vcs import carry, lanes, relative_to
from agentloop.vcs.choose import (
    IntegrationConflict,
    MainLine,
    open_lane,
    open_workspace,
    remove_workspace,
)
from agentloop.vcs.protocol import Change

DIFF_LIMIT = 20_000   # characters of each diff a conflict session is shown
INTRO = """\
Another session did the task below on another machine, in group {group} of this plan; it is \
done, and its change must now join the main line, where other groups' work landed first.

The task:
{task}

Its change:
{diff}

What the main line changed in the conflicting files since this group began:
{theirs}

---

"""


class GroupReplay:
    """One group's replay: its worktree (made when first needed) and, for a conflict, a run."""

    def __init__(self, project: Project, state: State, options: RunOptions, emit: Emit,
                 main: MainLine, repo: carry.Repo, lane: str, name: str, plan: str) -> None:
        self.project, self.state, self.options, self.emit = project, state, options, emit
        self.main, self.repo, self.lane, self.name, self.plan = main, repo, lane, name, plan
        self.space: lanes.Workspace | None = None
        self.vcs: Any = None   # the group's git lane (agentloop.vcs.choose.open_lane)

    def land(self, task: TaskState, source: str, kept: bool) -> str | None:
        """Task `task`'s job commit `source` on the main line: the main line's new commit, or
        None when it conflicts and stays so (the task is then `conflicted`)."""
        prepared = carry.with_trailer(self.repo, source, [
            *carry.task_trailers(self.plan, task.index).splitlines(),
            f"{carry.TRAILER}: {source}"])
        vcs = self._open(fresh=not kept)
        tip = self.main.tip()
        if kept:  # a person resolved it on the group's branch, on the main line: their tree
            head = vcs.head()
            if head != prepared and carry.is_ancestor(self.repo, tip, head):
                prepared = _retree(self.repo, prepared, head, tip)
        files = vcs.open_conflict(IntegrationConflict(prepared, (), tip))
        conflict = IntegrationConflict(prepared, tuple(files), tip)
        if not files:
            try:
                return vcs.close_conflict(conflict).change_id
            except IntegrationConflict as moved:
                conflict = moved
        run = self._run(vcs)
        attempt = task.history[-1]
        intro = INTRO.format(group=self.name, task=task.task,
                             diff=self._diff(f"{prepared}^", prepared, ()),
                             theirs=self._diff(self._base(prepared, tip), tip, files))
        try:
            done = conflicts.resolve(run, task, Change(change_id=prepared), None, conflict,
                                     attempt, intro=intro)
        except conflicts.GroupConflicted:
            task.error = self._stuck(conflict.files)
            self.project.store.save(self.state, task)
            return None
        return done.change_id

    def save(self, task: TaskState) -> None:
        """The task's merged record, saved at once (a killed integration loses nothing)."""
        self.project.store.save(self.state, task)

    def close(self, keep: bool) -> None:
        """The worktree removed, with its branch, unless a conflict keeps it for a person."""
        if self.vcs is not None:
            self.main.forget(self.vcs.lane_commits)
            self.vcs.close()
        if self.space is not None and not keep:
            remove_workspace("git", self.project.root, self.space)

    def _open(self, fresh: bool) -> Any:
        if self.vcs is None:
            self.space = open_workspace("git", self.project.root, self.lane, self.main.tip(),
                                            fresh)
            rel = relative_to(self.project.task_file, self.project.root) or \
                self.project.task_file.name
            self.vcs = open_lane("git", self.main, self.space.path, self.space.path / rel)
            self.vcs.prepare()
        return self.vcs

    def _run(self, vcs: Any) -> Run:
        name = choose_agent(self.options, None)
        agent = make_agent(name, self.options.agent_program,
                           sandbox=open_sandbox(self.project, self.options, self.emit))
        agent.check()
        return Run(self.project, self.state, agent, vcs, self.options, self.emit,
                   Learnings(self.project.store.dir, self.project.task_file_name),
                   advisor=_no_advisor, workdir=vcs.root, lane=self.name)

    def _base(self, commit: str, tip: str) -> str:
        return self.repo.git("merge-base", commit, tip)[1].strip()

    def _diff(self, old: str, new: str, files: list[str] | tuple[str, ...]) -> str:
        out = self.repo.git("diff", old, new, "--", *files)[1]
        return out if len(out) <= DIFF_LIMIT else out[:DIFF_LIMIT] + "\n[… cut]"

    def _stuck(self, files: tuple[str, ...]) -> str:
        """What a person does with a task left conflicted by an integration."""
        assert self.space is not None
        branch, where = self.space.branch, self.project.store.relative(self.space.path)
        main = self.main.ref.removeprefix("refs/heads/")
        again = (f"agent-loop {typed_path(self.project.task_file_name)} --integrate --from "
                 f"{typed(self.options.from_remote or '')}")
        return (f"conflicts with {main} in {', '.join(files) or 'some files'}; its work is on "
                f"branch {branch} (worktree {where}): `git log -p {typed(main)}..{typed(branch)}` "
                f"shows it; resolve it there (`cd {typed(self.space.path)} && git rebase "
                f"{typed(main)}`, fix, `git rebase --continue`), then run `{again}` again")


def _retree(repo: carry.Repo, prepared: str, head: str, parent: str) -> str:
    """`prepared`'s message and author on `head`'s tree, on `parent` (the main line): what
    lands is the tree the person left, whatever commits they made to get there."""
    tree = repo.git("rev-parse", f"{head}^{{tree}}")[1].strip()
    message = repo.git("log", "-1", "--format=%B", prepared)[1]
    who = repo.git("log", "-1", "--format=%an%x00%ae%x00%ad", "--date=raw", prepared)[1]
    name, email, when = who.strip("\n").split("\0")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when}
    return repo.git("commit-tree", tree, "-p", parent, input=message, env=env)[1].strip()


def _no_advisor(**_: object) -> None:
    """A conflict session's run asks no advisor (run.conflicts decides)."""
    raise AssertionError("a conflict resolution asks no retry advice")
