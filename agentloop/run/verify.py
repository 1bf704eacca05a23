"""The user's checks in a run: once before the first task (the baseline), and after each
successful developer run, with failures going back to the developer's session as fix runs.

- A task's checks are its plan's (for its file and group) and then --check's, each once.
- After the developer's run, and after each fix run, every check runs on the task's working copy.
  All pass: the outcome carries them (the reviewer sees them, the commit message names them).
  One fails: the session is resumed with the failures (agentloop.checks.fix_prompt), and its
  edits land in the same change; after --check-rounds fix runs with a check still failing, the
  attempt fails with the check's output as its error, and the runner's rules take over (its
  change dropped, the retry advisor asked).
- --require-changes: a developer's run that left no changes fails the attempt the same way.
- Ctrl+C during a check stops its whole process group and raises Interrupted; the attempt
  around it is abandoned like one stopped during the agent's run.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from agentloop.agents import OTHER, Failure
from agentloop.errors import CheckFailed, VcsError
from agentloop.options.record import RunOptions
from agentloop.run import checks, repo_hooks
from agentloop.run.checks import CheckRun
from agentloop.run.context import Run
from agentloop.run.decisions import ChecksRan
from agentloop.run.events import CheckFinished, ChecksDone, CheckStarted
from agentloop.run.fixes import Outcome, fix_run
from agentloop.run.handover import hand
from agentloop.run.selection import commit_message
from agentloop.state.schema import TaskState

NO_CHANGES = "the task changed no files (--require-changes)"
BASELINE_LOG = "checks-baseline.log"


def plan_checks(task: TaskState) -> tuple[str, ...]:
    """The checks the plan declares for this task (its file's and its group's).

    The hook for the plan format: the parsed Task carries them as `checks`, and
    TaskState.from_task keeps them in the task's ledger.
    """
    return tuple(task.checks)


def task_checks(options: RunOptions, task: TaskState) -> tuple[str, ...]:
    """Every check that decides whether `task` is done: the plan's, then --check's, each once."""
    return tuple(dict.fromkeys((*plan_checks(task), *options.check)))


def check_log(run: Run, task: TaskState, number: int) -> Path:
    """The task attempt's check log, beside its agent logs: NNN-task[-attemptN]-checks.log."""
    base = run.project.store.log_path(task.log_name, number)
    return base.with_name(f"{base.stem}-checks.log")


def baseline(run: Run, tasks: list[TaskState]) -> tuple[CheckRun, ...]:
    """Every check the run's tasks will meet, once, before any agent runs: CheckFailed (the
    run stops, naming the check) when one fails. The repository's hooks (`git-hooks`) are
    among them: one that refuses the tree as it is fails every task whatever the agent does."""
    commands = tuple(dict.fromkeys(c for t in tasks for c in task_checks(run.options, t)))
    missing = repo_hooks.not_in_lane(run) if tasks else None
    if missing is not None:
        raise CheckFailed(missing)
    hooked = bool(tasks) and repo_hooks.wanted(run)
    if not commands and not hooked:
        return ()
    log = run.project.store.logs / BASELINE_LOG
    runs = _round(run, 0, commands, log, 0) + \
        (repo_hooks.run_hooks(run, tasks[0], log, 0, index=0) if hooked else ())
    failed = [r for r in runs if not r.passed]
    run.emit(ChecksDone(0, 0, 0, len(runs), sum(r.seconds for r in runs),
                        tuple(checks.describe(r) for r in failed)))
    if failed:
        refused = repo_hooks.refused_messages(
            run, failed, commit_message(tasks[0], run.state.title)) if hooked else {}
        where = "" if run.workdir is None or len(refused) == len(failed) else (
            f"\nIt ran in the run's working copy {run.project.shown(run.workdir)}, your last "
            "commit as each task starts from: what it needs that git ignores there (`.env`, "
            "`node_modules`) comes in with `--lane-copy`, `--lane-link` or `--lane-setup`, "
            "what you have not committed with a commit")
        raise CheckFailed(checks.baseline_message(failed, refused) + where)
    return runs


class FirstChecks:
    """The baseline of `tasks`, once before the run's first agent, in the lane that comes to
    one first: a new lane is your last commit given the same `--lane-copy`, `--lane-link` and
    `--lane-setup` as every other, so what fails there fails in each. Any other lane waits for
    it before its own first agent, and starts none unless it passed."""

    def __init__(self, tasks: list[TaskState]) -> None:
        self._tasks = tasks
        self._lock = threading.Lock()
        self._passed: bool | None = None  # None: not run yet

    def __call__(self, run: Run, task: TaskState) -> bool:
        """Whether `run`'s lane may start `task`, its first agent: the checks passed, run here
        now (CheckFailed when one fails) or in a lane before; False when they failed there or a
        stop cut them short (that lane says why)."""
        with self._lock:
            if self._passed is None:
                self._passed = False  # till they pass: a failure or a stop starts no agent
                baseline(run, [t for t in self._tasks if t.index >= task.index
                               or t.group != task.group])
                self._passed = True
            return self._passed


def verify(run: Run, task: TaskState, outcome: Outcome) -> Outcome:
    """Hold a developer's successful outcome to the task's checks, with fix runs; the outcome
    that comes back either passed them all or failed (the runner's rules then apply)."""
    # A note here says where the files it wrote inside a submodule are kept
    # (agentloop.run.submodule_files): changes, though none the task's commit can hold.
    if run.options.require_changes and not outcome.note and \
            not run.vcs.diff(outcome.change).strip():
        return _failed(outcome, NO_CHANGES)
    commands = task_checks(run.options, task)
    if not commands and not repo_hooks.wanted(run):
        return outcome
    rounds = run.options.check_rounds
    log = check_log(run, task, outcome.attempt.number)
    for round_ in range(rounds + 1):
        runs = _round(run, task.index, commands, log, round_) + \
            repo_hooks.run_hooks(run, task, log, round_)
        # Saved with the next step's save (a fix run's record, the task's end): no extra write.
        hand(run, task, ChecksRan(outcome.attempt, runs))
        failed = [r for r in runs if not r.passed]
        refused = repo_hooks.refused_messages(
            run, failed, commit_message(task, run.state.title)) if failed else {}
        if refused:
            # No fix round: the message is agent-loop's, not the agent's. The commit fails as
            # any commit may, the agent's work kept aside for the next run (run.attempt).
            raise VcsError(checks.baseline_message(
                [r for r in failed if r.command in refused], refused,
                f"on task {run.shared.number(task)}'s change"))
        run.emit(ChecksDone(task.index, round_, rounds, len(runs), sum(r.seconds for r in runs),
                            tuple(checks.describe(r) for r in failed)))
        if not failed:
            return replace(outcome, checks=runs)
        if round_ == rounds:
            return replace(_failed(outcome, checks.failure_text(failed)), checks=runs)
        outcome = fix_run(run, task, outcome, checks.fix_prompt(failed, round_ + 1, rounds),
                          round_ + 1, kind="checks")
        if not outcome.succeeded:
            return outcome  # the runner's rules take over
    raise AssertionError("unreachable")


def _round(run: Run, index: int, commands: tuple[str, ...], log: Path,
           round_: int) -> tuple[CheckRun, ...]:
    """Each check once, with an event before and after it."""
    store = run.project.store
    runs = []
    for command in commands:
        run.emit(CheckStarted(index, command, round_, str(log)))
        done = checks.run_checks((command,), run.cwd, log, run.options.check_timeout,
                                 round_, store.relative(log))[0]
        run.emit(CheckFinished(index, command, done.exit_code, done.seconds, str(log), round_,
                               done.timed_out))
        runs.append(done)
    return tuple(runs)


def _failed(outcome: Outcome, reason: str) -> Outcome:
    """The attempt failed on the core's own finding, not the agent's: `reason` is its error."""
    result = replace(outcome.result, ok=False, error=reason)
    return replace(outcome, result=result, failure=Failure(OTHER, reason))
