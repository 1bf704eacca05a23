"""Which one operation a command asks for, and how it ends: the one place that turns parsed
options into a call of the core (agentloop.app) and its printed result and exit code.

Both doors reach it: the click command line (agentloop.cli), and `--status` answered before
click is imported (agentloop.console.quick). Neither decides anything itself."""

from __future__ import annotations

import sys
from pathlib import Path

from agentloop.console.stops import crash, echo, from_a_stop, report, warn, write
from agentloop.errors import INTERNAL_EXIT, AgentLoopError

# typing for the checker only: --status imports this module, not typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from agentloop.options.record import RunOptions


def reported(args: list[str], as_json: bool, work: Callable[[], int]) -> int:
    """`work`'s exit code; a stop or an error said in one line (agentloop.console.stops)
    instead, with its own code."""
    try:
        return work()
    except (KeyboardInterrupt, AgentLoopError) as exc:
        return report(exc, args, as_json)
    except Exception as exc:
        if not from_a_stop(exc):
            raise
        return report(KeyboardInterrupt(), args, as_json)


def last_resort(exc: BaseException) -> int:
    """An error nobody expected: its traceback to the crash log, one line on screen."""
    crash(exc)
    return INTERNAL_EXIT


def status(tasks_md: Path | None, cwd: Path, as_json: bool, rehearse: bool = False) -> int:
    """Print `--status`: of one plan, or without one of every plan of the repository."""
    from agentloop import standing
    from agentloop.console import render

    if tasks_md is None:
        root, plans = standing.overview(cwd)
        write(render.overview_json(root, plans) if as_json
              else render.overview_text(root, plans, cwd))
    else:
        view = standing.status(tasks_md, cwd, rehearse)
        write(render.status_json(view) if as_json else render.status_text(view, cwd))
    return 0


def dispatch(tasks_md: Path | None, cwd: Path, options: RunOptions) -> int:
    """Run the one operation the options ask for, print what it returns; the exit code."""
    from agentloop import app
    from agentloop.console import closing

    if options.serve or options.report:  # the dashboard: agentloop.dashboard
        from agentloop.dashboard import commands

        return commands.dispatch(tasks_md, cwd, options, dispatch, echo, warn)
    if tasks_md is None:  # --status alone: every plan of the repository
        return status(None, cwd, options.as_json)
    if options.status and options.follow:
        from agentloop.console.live import Console
        from agentloop.run.events import RunFinished

        console = Console(live=False, cwd=cwd)
        # A pipe's reader gone (`| head -1`): nothing left to follow for (agentloop.console.gone)
        left = getattr(sys.stdout, "reader_left", lambda within: False)
        code = 0
        for event in app.follow(tasks_md, cwd, watched=lambda: not left(0)):
            console(event)
            if isinstance(event, RunFinished):   # its last event: exit as that run did
                from agentloop.run.summary import followed_exit

                code = followed_exit(event)
        return code
    elif options.status:
        return status(tasks_md, cwd, options.as_json, options.rehearse)
    elif options.dry_run:
        from agentloop.console import dry_run

        plan = app.dry_run(tasks_md, cwd, options)
        write(dry_run.plan_json(plan) if options.as_json else dry_run.plan_text(plan))
    elif options.init:
        echo(app.init(tasks_md, cwd))
    elif options.stop_after_running:
        echo(app.ask_to_stop(tasks_md, cwd))
    elif options.integrate:
        from agentloop.console.fleet import integrate

        return integrate(tasks_md, cwd, options, write)
    else:
        from agentloop.console.dashboard_options import with_notices
        from agentloop.console.live import Console

        if options.reset and not options.yes:
            from agentloop.console.confirm import reset_allowed

            if not reset_allowed(lambda: app.redone_by_reset(tasks_md, cwd)):
                echo("agent-loop: nothing was changed (no --reset)", err=True)
                return 1
        result = with_notices(options.notify, str(tasks_md), Console(cwd=cwd),
                              lambda emit: app.run(tasks_md, cwd, options, emit))
        for line in closing.closing_lines(result, cwd):
            echo(line)
        # Loaded once the run is over: before it, its modules would hold up the run's start.
        from agentloop.run.summary import exit_code

        return exit_code(result.summary)
    return 0
