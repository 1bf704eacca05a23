"""--serve and --report as the command line runs them: what each does, in order, and how long
the dashboard stays. The run itself is the CLI's (`run`), unchanged by being watched."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from agentloop.errors import UsageError
from agentloop.options.record import RunOptions
from agentloop.state.project import open_project, plan_stores

Echo = Callable[[str], None]


def dispatch(tasks_md: Path | None, cwd: Path, options: RunOptions,
             run: Callable[[Path, Path, RunOptions], int], echo: Echo, warn: Echo) -> int:
    """--report: write the file. --serve: serve the dashboard, run the plan (if one is named:
    `run` is the command line's own run, given the options without --serve) and keep serving
    after it on a terminal, until Ctrl+C; the run's exit code."""
    if options.report:
        from agentloop.dashboard import report

        if tasks_md is None:
            raise UsageError("--report needs the plan: agent-loop TASKS_MD --report FILE")
        if options.report == "-":  # the page itself, for a pipe
            echo(report.html(open_project(tasks_md, cwd))[0])
        else:
            echo(report.write(open_project(tasks_md, cwd), cwd / options.report,
                              options.report))
        return 0
    from agentloop.dashboard import serve

    root = open_project(tasks_md, cwd).root if tasks_md is not None else plan_stores(cwd)[0]
    served = serve.start(root, options.serve_host, options.serve_port, warn)
    echo(f"dashboard: {served.url}")
    try:
        if tasks_md is None:
            serve.wait_for_ctrl_c()
            return 0
        code = run(tasks_md, cwd, replace(options, serve=False))
        if sys.stdin.isatty() and sys.stdout.isatty():
            echo("the run has ended; the dashboard stays served until Ctrl+C")
            serve.wait_for_ctrl_c()
        return code
    finally:
        served.stop()
