"""Whether a run's agent works in a lane of its own or in the user's checkout (the `workplace`
setting), and what a new lane is given before its first task: the ignored files the user
named (lane-copy, lane-link) and their setup command (lane-setup), run once per new lane.

A lane is the default since the user's own edits, made while a task runs, can then never be
taken into that task's commit: the agent's files reach the checkout only when the task lands.
Where a lane cannot be (no version control) or is not needed (a rehearsal's and a fleet job's
copies are their own already), the agent works in the checkout, and a lane asked for is said
to be missing in one line."""

from __future__ import annotations

import time

from agentloop import proc
from agentloop.errors import ProcessError, RunStopped
from agentloop.options.record import RunOptions
from agentloop.run.checks import argv
from agentloop.run.context import FleetJob, Run
from agentloop.run.lane_tag import LaneNote
from agentloop.state.schema import now
from agentloop.vcs.choose import has_commit
from agentloop.vcs.lanes import Workspace

SETUP_LOG = "lane-setup.log"


def in_lanes(run: Run) -> bool:
    """Whether this run's groups work in lanes of their own."""
    if run.options.parallel > 1:
        return True
    return wants_lane(run.options, run.job) and run.vcs.name in ("git", "jj") and \
        has_commit(run.vcs.name, run.project.root) and not _detached(run)


def wants_lane(options: RunOptions, job: FleetJob | None) -> bool:
    """Whether a run with these options has its agent work in lanes wherever one can be (git or
    jj, a commit to start from, a branch to land on): known before the checkout is prepared,
    which leaves the user's uncommitted files alone then, instead of refusing them."""
    if options.parallel > 1 and not options.only:  # --task runs one lane (run.loop)
        return True
    return options.workplace == "lane" and not options.rehearse and job is None


def _detached(run: Run) -> bool:
    """A git checkout on no branch: a lane has no branch to land its tasks on."""
    from agentloop.vcs.stays_git import detached_head

    return run.vcs.name == "git" and detached_head(run.project.root) is not None


def no_lane_note(run: Run) -> str | None:
    """Why a lane asked for cannot be: no version control, or no commit yet to start it from
    (said once, as the run starts)."""
    if run.options.workplace != "lane" or run.options.rehearse or run.job is not None or \
            run.options.parallel > 1:
        return None
    if run.vcs.name not in ("git", "jj"):
        return ("the agent works in your checkout: without version control (--vcs none) it "
                "has no working copy of its own, so what you change there while a task runs "
                "may end up in that task")
    if _detached(run):
        return ("the agent works in your checkout this time: git's HEAD is on no branch, so a "
                "working copy of its own would have no branch to land its tasks on")
    if not has_commit(run.vcs.name, run.project.root):
        return ("the agent works in your checkout this time: the repository has no commit yet "
                "for a working copy of its own to start from; once the first task is "
                "committed, the next run works in a lane")
    return None


def furnish_lane(run: Run, space: Workspace) -> None:
    """A new lane given what the settings bring: copies, links, then the setup command.
    RunStopped when the setup command fails, before any agent is paid to work there."""
    options = run.options
    if space.reused or not (options.lane_copy or options.lane_link or options.lane_setup):
        return
    from agentloop.vcs.furnish import furnish  # only lanes the settings furnish

    for note in furnish(run.project.root, space.path, options.lane_copy,
                        options.lane_link):
        run.emit(LaneNote(note))
    if not options.lane_setup:
        return
    command, log = options.lane_setup, run.project.store.dir / SETUP_LOG
    shown = run.project.store.relative(log)
    started = time.monotonic()
    try:
        done = proc.run(argv(command), cwd=space.path, check=False,
                        timeout=options.check_timeout)
        code, output, ended = done.returncode, done.stdout, f"exit {done.returncode}"
    except ProcessError as exc:
        code, output, ended = None, str(exc), "could not run, or timed out"
    seconds = time.monotonic() - started
    with log.open("a", encoding="utf-8", errors="replace") as out:
        out.write(f"== {now()} lane-setup in {space.path}: {command}\n{output.rstrip()}\n"
                  f"== {ended} ({seconds:.1f}s)\n")
    if code != 0:
        raise RunStopped(f"lane-setup `{command}` failed in {space.path} ({ended}); its output "
                         f"is in {shown}: fix the command, or run with --workplace checkout")
    run.emit(LaneNote(f"lane-setup `{command}` ran in {space.path} ({seconds:.1f}s)"))
