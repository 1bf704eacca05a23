"""The command line: parse options, call one core function, print its result. Decides nothing.

How a stop or an error is said lives in agentloop.console.stops; --help's sections in
agentloop.console.help."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import click

from agentloop import __version__
from agentloop.console.command import run, take_stops
from agentloop.console.dispatch import last_resort
from agentloop.console.help import SectionedCommand
from agentloop.console.stops import json_error, stopped_before_start, write
from agentloop.options.table import OPTIONS
from agentloop.settings.click_types import click_type


class _Command(SectionedCommand):
    """Keeps the arguments as given, for the exact command that resumes a run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["argv"] = list(args)
        return super().parse_args(ctx, args)


def _with_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with every option of agentloop.options.table, each made a click option with the
    table's own words (--help and click's errors read them), then --version."""
    command = click.version_option(__version__, "--version", prog_name="agent-loop")(command)
    for entry in reversed(OPTIONS):
        kwargs = entry.kwargs
        if entry.type is not None:
            kwargs = {**kwargs, "type": click_type(entry.type)}
        command = click.option(*entry.decls, **kwargs)(command)
    return command


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]},
               epilog="The options that shape a run are settings too: agent-loop.toml or "
                      "[tool.agent-loop] in pyproject.toml, ~/.config/agent-loop/config.toml, "
                      "AGENT_LOOP_<OPTION> variables; --show-settings shows what applies.")
@click.argument("tasks_md", type=click.Path(path_type=Path), required=False)
@_with_options
def command(tasks_md: Path | None, **params: Any) -> None:
    """Let a coding agent work through TASKS_MD: one task, one agent run, one change.
    `agent-loop --status` alone lists every plan of the repository."""
    ctx = click.get_current_context()
    args = ctx.meta["argv"]
    if tasks_md is None and not (params["status"] and not params["follow"] or params["serve"]):
        raise click.UsageError("Missing argument 'TASKS_MD' (only --status and --serve work "
                               "without one).", ctx)
    given = {name for name in params
             if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
    sys.exit(run(tasks_md, params, args, given))


def main() -> None:
    """Console entry point."""
    # Nothing is imported here, before the `try`: a stop inside an import would end in a
    # traceback (take_stops is imported with this module, while agentloop.__main__ holds the stops).
    take_stops()
    try:
        command.main(standalone_mode=False, prog_name="agent-loop")
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.exit(stopped_before_start())   # while parsing: nothing was changed
    except click.UsageError as exc:
        from agentloop.console.usage import option_names, usage_line

        line = usage_line(exc, option_names(command, exc.ctx))
        click.echo(f"agent-loop: error: {line}", err=True)
        if "--json" in sys.argv[1:]:
            write(json_error(line, exc.exit_code))
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        if "--json" in sys.argv[1:]:
            write(json_error(exc.format_message(), exc.exit_code))
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - the last line of defence
        sys.exit(last_resort(exc))
