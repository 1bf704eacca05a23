"""The command line: parse options, call one core function, print its result. Decides nothing.

How a stop or an error is said lives in agentloop.console.stops; --help's sections in
agentloop.console.help."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import click

from agentloop import __version__
from agentloop.console.dashboard_options import dashboard_options
from agentloop.console.dispatch import dispatch as _dispatch
from agentloop.console.dispatch import last_resort, reported
from agentloop.console.gone import steady
from agentloop.console.help import SectionedCommand
from agentloop.console.stops import json_error, write
from agentloop.console.workplace_options import workplace_options
from agentloop.errors import stop
from agentloop.settings.schema import AgentChoice, Assignment, ModelRates, VariableName


class _Command(SectionedCommand):
    """Keeps the arguments as given, for the exact command that resumes a run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["argv"] = list(args)
        return super().parse_args(ctx, args)


# --help's sections: an option added here needs its word in console.help.SECTIONS too.
@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]},
               epilog="The options that shape a run are settings too: agent-loop.toml or "
                      "[tool.agent-loop] in pyproject.toml, ~/.config/agent-loop/config.toml, "
                      "AGENT_LOOP_<OPTION> variables; --show-settings shows what applies.")
@click.argument("tasks_md", type=click.Path(path_type=Path), required=False)
@click.option("--agent", type=AgentChoice(),
              default="claude", show_default=True,
              help="The coding agent that does the tasks (a run goes on with the one it began "
                   "with unless --reset).")
@click.option("--agent-program", "--claude", "agent_program", metavar="PATH", default=None,
              help="The agent's program [default: claude or codex on PATH; env "
                   "AGENT_LOOP_CLAUDE / AGENT_LOOP_CODEX].")
@click.option("--model", metavar="NAME", default=None,
              help="Model for the tasks [default: the agent's; claude: opus].")
@click.option("--dry-run", is_flag=True, help="Show what would run; run and write nothing.")
@click.option("--status", is_flag=True, help="Show where each task stands.")
@click.option("--json", "as_json", is_flag=True, help="With --status or --dry-run: print JSON.")
@click.option("--follow", is_flag=True,
              help="With --status: print the newest run's events as they happen.")
@click.option("--init", is_flag=True, help="Write a commented example plan to TASKS_MD.")
@click.option("--rehearse", is_flag=True,
              help="Run the whole loop offline with a stand-in agent: each task makes a small "
                   "visible edit, and its log says what a real run would send. Costs nothing, "
                   "needs a git or jj repository, and works in a copy and a state of its own: "
                   "your branch, files and progress stay as they are. With --status: the last "
                   "rehearsal's.")
@click.option("--reset", is_flag=True,
              help="Archive the state and logs, then run the whole plan again from its first "
                   "task: done tasks are done again, and paid for again. In a terminal it asks "
                   "first; with --dry-run it shows what would run.")
@click.option("--yes", is_flag=True, help="With --reset: do not ask before redoing done tasks.")
@click.option("--vcs", type=click.Choice(["auto", "jj", "git", "none"]), default="auto",
              show_default=True, help="Where each task's change goes.")
@click.option("--allow-dirty/--no-allow-dirty", default=False,
              help="git, with the agent in your checkout (--workplace checkout): run even "
                   "with uncommitted changes (they stay out of task commits). A run in lanes "
                   "leaves them alone without it.")
@click.option("--task-timeout", metavar="SECONDS", type=click.FloatRange(min=1),
              default=7200, show_default=True,
              help="Stop an agent run after this many seconds (counts as a transient failure).")
@click.option("--max-attempts", metavar="N", type=click.IntRange(1, 5),
              default=5, show_default=True,
              help="Attempts per task in all; 5 is the hard cap.")
@click.option("--retry-model", metavar="NAME", default=None,
              help="Model of the advisor that judges a failed attempt [default: the agent's "
                   "small model; claude: haiku].")
@click.option("--max-limit-waits", metavar="N", type=click.IntRange(min=0),
              default=5, show_default=True,
              help="Usage-limit waits before the run stops.")
@click.option("--max-failures", metavar="N", type=click.IntRange(min=1),
              default=3, show_default=True,
              help="Failed tasks in a row before the run stops as stuck.")
@click.option("--backoff", metavar="SECONDS", type=click.FloatRange(min=0),
              default=30, show_default=True,
              help="First wait in seconds after a transient failure or a limit without a "
                   "reset time; doubles each time.")
@click.option("--iterations", metavar="N", type=click.IntRange(1, 50), default=1, show_default=True,
              help="Runs of one task in its session until the agent says TASK_COMPLETE.")
@click.option("--task", multiple=True, metavar="N",
              help="Run only these tasks (as numbered by --dry-run), leaving the others as they "
                   "are: a number, a range or a list (--task 6, --task 3-5,8); repeatable.")
@click.option("--group", default=None, metavar="G",
              help="Run only the tasks of one group: its number in --dry-run or its heading "
                   "(any case).")
@click.option("--again", is_flag=True,
              help="With --task or --group: run completed, failed or blocked tasks once more, "
                   "each in a new change.")
@click.option("--ignore-deps", is_flag=True,
              help="Start a group even when a group it waits for (`Depends on:`) is not done.")
@click.option("--include-optional/--no-include-optional", default=False,
              help="Also run the tasks a plan marks optional (Kiro's box with a star: "
                   "`- [ ]*`).")
@click.option("--tick-boxes/--no-tick-boxes", default=False,
              help="Tick a task's box in the plan (`- [ ]` to `- [x]`) when it lands; a line "
                   "you changed meanwhile is left alone. The tick is not committed.")
@click.option("--sleep", metavar="SECONDS", type=click.FloatRange(min=0),
              default=0, show_default=True,
              help="Seconds to wait between tasks (Ctrl+C ends the wait at once).")
@click.option("--budget", metavar="USD", type=click.FloatRange(min=0), default=None,
              help="USD: the most this plan may cost since its last --reset; no task starts "
                   "once that much is spent. A re-run without --budget keeps the last one.")
@click.option("--price", "prices", multiple=True, type=ModelRates(),
              help="What a model's tokens cost, for an agent that reports tokens but no "
                   "dollars (Codex): MODEL=IN/CACHED/OUT in USD per million tokens; repeatable. "
                   "Known models are priced already (docs/how-to/costs.md).")
@click.option("--task-budget", metavar="USD", type=click.FloatRange(min=0), default=None,
              help="USD: the cap on one agent run (the agent's own limit, where it has one).")
@click.option("--distill/--no-distill", default=True,
              help="A small model writes each change's commit message (--no-distill: keep the "
                   "plain one).")
@click.option("--distill-model", metavar="NAME", default=None,
              help="Model that writes each change's commit message [default: the agent's small "
                   "model].")
@click.option("--review/--no-review", default=False,
              help="A fresh, read-only reviewer checks each task's diff; its feedback goes back "
                   "to the developer until it approves.")
@click.option("--review-model", metavar="NAME", default=None,
              help="Model of the reviewer [default: the agent's; claude: sonnet].")
@click.option("--max-review-rounds", metavar="N", type=click.IntRange(1, 10),
              default=3, show_default=True,
              help="Reviews of one task before it is left unapproved (its change kept).")
@click.option("--check", multiple=True, metavar="CMD",
              help="A command line that must pass (exit 0) after each task, run by your shell in "
                   "the repository root; repeatable. It runs once before the first task too "
                   "(baseline), and a failure goes back to the agent to fix.")
@click.option("--check-timeout", metavar="SECONDS", type=click.FloatRange(min=1),
              default=600, show_default=True,
              help="Seconds before a check is stopped (with everything it started) and failed.")
@click.option("--check-rounds", metavar="N", type=click.IntRange(0, 10),
              default=2, show_default=True,
              help="Fix runs of a task in the same session while a check fails, before its "
                   "attempt fails.")
@click.option("--require-changes/--no-require-changes", default=False,
              help="A task that changes no files is a failed attempt.")
@click.option("--git-hooks/--no-git-hooks", default=False,
              help="Run the repository's pre-commit and commit-msg hooks on each task's change "
                   "(git only), as checks: a failing hook goes back to the agent to fix.")
# -- settings, hooks, the agent's environment (docs/reference/settings.md, docs/how-to/hooks.md)
@click.option("--env", "env", multiple=True, type=Assignment(),
              help="Set a variable for the agent: NAME=VALUE; repeatable.")
@click.option("--env-exclude", multiple=True, type=VariableName(),
              help="Remove a variable from the agent's environment; repeatable.")
@click.option("--sandbox/--no-sandbox", default=False,
              help="Run every agent inside an operating-system sandbox (Linux: bubblewrap): it "
                   "writes only its working copy, sees no ~/.ssh, ~/.aws or other secrets.")
@click.option("--sandbox-hide", multiple=True, metavar="PATH",
              help="With --sandbox: one more path no agent may see (~ for the home folder); "
                   "repeatable.")
@click.option("--on-finish", default=None, metavar="CMD",
              help="A command line your shell runs when the run ends, however it ends.")
@click.option("--on-task", default=None, metavar="CMD",
              help="A command line your shell runs after each completed task.")
@click.option("--hook-timeout", metavar="SECONDS", type=click.FloatRange(min=1), default=60,
              show_default=True,
              help="Seconds before a hook is stopped (with everything it started).")
@click.option("--show-settings", is_flag=True,
              help="Print every setting and where it came from (with --json: as JSON).")
@click.option("--parallel", type=click.IntRange(min=1), default=1, metavar="K",
              help="Run up to K groups at once, each in a working copy of its own.")
@click.option("--stop-after-running", is_flag=True,
              help="Ask the parallel run going on to start no new task, then stop.")
@click.option("--push", metavar="REMOTE", help="With --group: a CI job; its branch and state "
              "go to REMOTE after every task, and a re-run resumes.")
@click.option("--integrate", is_flag=True, help="With --from: every finished group's tasks onto "
              "the current branch, states merged.")
@click.option("--from", "from_remote", metavar="REMOTE", help="With --integrate: the jobs' remote.")
@workplace_options
@dashboard_options
@click.version_option(__version__, "--version", prog_name="agent-loop")
def command(tasks_md: Path | None, **params: Any) -> None:
    """Let a coding agent work through TASKS_MD: one task, one agent run, one change.
    `agent-loop --status` alone lists every plan of the repository."""
    # Imported after parsing, so --help and --version stay fast.
    from agentloop.options import RunOptions, check_usage

    ctx = click.get_current_context()
    args = ctx.meta["argv"]
    if tasks_md is None and not (params["status"] and not params["follow"] or params["serve"]):
        raise click.UsageError("Missing argument 'TASKS_MD' (only --status and --serve work "
                               "without one).", ctx)
    typed = ctx.get_parameter_source("agent") is click.core.ParameterSource.COMMANDLINE
    params = {**params, "command": tuple(args), "agent_given": typed}
    options = RunOptions.from_params(params)

    def work() -> int:
        # Settings shape runs; --status runs nothing and reads the state alone (a settings
        # file that cannot be read does not hide where the tasks stand).
        # --serve without a plan reads the same files (no plan's table): its port and host.
        reads_settings = not (params["status"] and not params["show_settings"])
        effective = _settings(tasks_md, params) if reads_settings and \
            (tasks_md is not None or params["serve"]) else None
        chosen = RunOptions.from_params({**params, **effective.values}) \
            if effective is not None else options
        check_usage(chosen)
        if chosen.show_settings and effective is not None:
            _show_settings(effective, chosen.as_json)
            return 0
        return _dispatch(tasks_md, Path.cwd(), chosen)

    sys.exit(reported(args, options.as_json, work))


def _settings(tasks_md: Path | None, params: dict[str, Any]) -> Any:
    """The settings from every source, the command line's own first (agentloop.settings)."""
    from agentloop.settings.merge import resolve

    ctx = click.get_current_context()
    given = {name for name in params
             if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
    return resolve(ctx.command.params, params, given, tasks_md, Path.cwd())


def _show_settings(effective: Any, as_json: bool) -> None:
    from agentloop.settings import show

    write(show.as_json(effective) if as_json else show.text(effective))


def main() -> None:
    """Console entry point."""
    # Nothing is imported here, before the `try`: a stop inside an import would end in a
    # traceback (steady is imported with this module, while agentloop.__main__ holds the stops).
    sys.stdout, sys.stderr = steady(sys.stdout), steady(sys.stderr)  # a reader may go away
    # SIGTERM and SIGHUP (a closed terminal, a dropped ssh) take the same careful path as
    # Ctrl+C: stop the agent, save, exit 130.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        command.main(standalone_mode=False, prog_name="agent-loop")
    except (click.exceptions.Abort, KeyboardInterrupt):
        # Stopped before the command itself ran (while parsing): nothing was changed.
        sys.stderr.write("\nagent-loop: interrupted; nothing was changed\n")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        if "--json" in sys.argv[1:]:
            write(json_error(exc.format_message(), exc.exit_code))
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - the last line of defence
        sys.exit(last_resort(exc))
