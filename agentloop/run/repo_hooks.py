"""The repository's own git hooks on each task's change (the `git-hooks` setting): `pre-commit`
and `commit-msg` run as checks after the developer's run, with the checks, and a hook that fails
is a failed check the task's session is asked to fix (agentloop.run.verify), but for a
commit-msg hook: the message it refuses is agent-loop's, so the commit fails as any may, the
agent's work kept for the next run, and the line says what the user can do. Off, the run says in
one line at its start which hooks its commits skip; with jj there is no commit for git to hook,
and the run says that instead.

A hook runs code the agent may have written (a test it added, a formatter's configuration), so
with --sandbox it runs inside the same sandbox as the agent: it writes the working copy and its
VCS data only, and sees none of the user's secrets."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path

from agentloop.run import checks
from agentloop.run.checks import CheckRun
from agentloop.run.context import Run
from agentloop.run.events import CheckFinished, CheckStarted
from agentloop.run.selection import commit_message
from agentloop.state.schema import TaskState
from agentloop.vcs.githooks import hooks, on_commit, present, staged


def start_notes(vcs: str, root: Path, enabled: bool) -> list[str]:
    """The run's first lines about the repository's hooks: which its commits skip, or that
    the setting cannot work with this VCS."""
    if vcs == "none":
        return []
    if enabled and vcs != "git":
        return [f"git-hooks: not available with {vcs} (its changes are no git commits); the "
                "repository's hooks do not run on the tasks' changes"]
    if vcs != "git":
        return _colocated_notes(root)
    found, unrun = present(root)
    notes = []
    if found and not enabled:
        notes.append(f"the repository's {_names(h.name for h in found)} will not run on the "
                     "tasks' commits (git-hooks = true, or --git-hooks, runs them as checks)")
    if unrun:
        notes.append(f"the repository's {_names(unrun)} will not run on the tasks' commits "
                     "(agent-loop runs none of them; git-hooks runs only pre-commit and "
                     "commit-msg, as checks)")
    return notes


def _colocated_notes(root: Path) -> list[str]:
    """A jj repository colocated with git (`jj git init --colocate`): the hooks git would run
    on a commit, which jj never runs, said as a git run says its own (nothing was said, and
    the hook silently never ran)."""
    if not (root / ".git").is_dir():
        return []  # jj's own repository: git's hooks folder is not the user's
    names = on_commit(root)
    if not names:
        return []
    return [f"the repository's {_names(names)} will not run on the tasks' changes (jj runs "
            "no git hook, and git-hooks is not available with jj)"]


def _names(names: Iterable[str]) -> str:
    listed = list(names)
    return f"{' and '.join(listed)} hook{'s' * (len(listed) > 1)}"


def not_in_lane(run: Run) -> str | None:
    """With git-hooks on, in a lane: why your checkout's hooks that the lane has none of (a
    core.hooksPath folder git ignores, as husky's `.husky/_`) stop the run before any agent;
    None when the lane has them all."""
    if not run.options.git_hooks or run.vcs.name != "git":
        return None
    # A rehearsal works in a copy of its own as a lane does (its project's root), your
    # checkout is its store's: it stops where the real run would, and says so.
    rehearsal = run.options.rehearse
    root = run.project.store.root if rehearsal else run.project.root
    if run.cwd == root:
        return None
    have = {h.name for h in hooks(run.cwd)}
    missing = [h for h in hooks(root) if h.name not in have]
    if not missing:
        return None
    import os  # a run that found such a hook only
    import shlex

    where = [os.path.relpath(h.path, root) for h in missing]
    folder = os.path.dirname(where[0]) if not where[0].startswith("..") else ""
    bring = f"`--lane-copy {shlex.quote(folder)}` brings it into each lane" if folder \
        else "commit it"
    whose = "the rehearsal's" if rehearsal else "the run's"
    also = "a real run stops here too; " if rehearsal else ""
    return (f"git-hooks: {whose} working copy {run.project.shown(run.cwd)} has no "
            f"{_names(h.name for h in missing)} ({', '.join(where)} in your checkout, in a "
            f"folder git ignores or keeps no commit of): {also}{bring}, or run without "
            "--git-hooks")


def refused_messages(run: Run, failed: Iterable[CheckRun], message: str) -> dict[str, str]:
    """Of `failed`, the commit-msg hook's run (command: what the user can do instead of
    fixing the tree or the command): the message it refuses is agent-loop's own, which
    neither the user nor the agent can change. Empty when that hook passed."""
    if not run.options.git_hooks or run.vcs.name != "git":
        return {}  # no hook ran: a failed check is the user's own
    from agentloop.vcs.trailers import PLAN_KEY, TASK_KEY  # a refusal's line only

    commands = {r.command for r in failed}
    return {h.command: (
        f"your commit-msg hook ({run.project.shown(h.path)}) refuses the message agent-loop "
        f"commits with (here `{message}`; always `agent-loop: <group> / <task>`, then its "
        f"trailers {PLAN_KEY} and {TASK_KEY}), which you cannot change: let the hook accept "
        "it, or run without --git-hooks") for h in hooks(run.cwd)
        if h.name == "commit-msg" and h.command in commands}


def wanted(run: Run) -> bool:
    """Whether this run holds each task's change to the repository's hooks."""
    return run.options.git_hooks and run.vcs.name == "git" and bool(hooks(run.cwd))


def run_hooks(run: Run, task: TaskState, log: Path, round_: int,
              index: int | None = None) -> tuple[CheckRun, ...]:
    """Each hook once on the task's change as it stands (with the task's commit message),
    logged with the task's checks; `index` names the task in the events (0: the baseline)."""
    index = task.index if index is None else index
    found = hooks(run.cwd) if wanted(run) else ()
    if not found:
        return ()
    runs = []
    log.parent.mkdir(parents=True, exist_ok=True)
    box = run.sandbox
    confine = None if box is None else partial(box.wrap, workdir=run.cwd)
    with staged(run.cwd, commit_message(task, run.state.title)) as env, open(log, "ab") as out:
        for hook in found:
            run.emit(CheckStarted(index, hook.command, round_, str(log)))
            done = checks.run_check(hook.command, run.cwd, out, run.project.store.relative(log),
                                    run.options.check_timeout, round_, env=env,
                                    confine=confine)
            run.emit(CheckFinished(index, hook.command, done.exit_code, done.seconds,
                                   str(log), round_, done.timed_out))
            runs.append(done)
    return tuple(runs)
