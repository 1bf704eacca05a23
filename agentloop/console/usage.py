"""A command line click cannot read, said in one line (`agent-loop: error: …`, exit 2): click's
own four lines (its usage, its `Try --help`, a blank line, the error) bury the one that matters,
and its guess compares names with their dashes, so `--frobnicate` was offered `--price`."""

from __future__ import annotations

from collections.abc import Iterable

import click

# How close a name must be to be offered (difflib's ratio): `parralel` is 0.875 from
# `parallel`, `budjet` 0.83 from `budget`; `frob` (0.75 from `from`) is offered nothing.
CLOSE = 0.8


def usage_line(exc: click.UsageError, names: Iterable[str]) -> str:
    """The one line for `exc`; an unknown option names the option of `names` (`--parallel`)
    closest to it by name, when one is close."""
    if not isinstance(exc, click.NoSuchOption):
        return exc.format_message()
    import difflib  # a mistyped option only

    given = exc.option_name.split("=", 1)[0]
    by_name = {name.lstrip("-"): name for name in names}
    close = difflib.get_close_matches(given.lstrip("-"), list(by_name), n=1, cutoff=CLOSE)
    if close:
        return f"no such option: {given} (did you mean {by_name[close[0]]}?)"
    return f"no such option: {given} (`agent-loop --help` lists the options)"


def option_names(command: click.Command, ctx: click.Context | None) -> list[str]:
    """Every long option of `command`, --help and --version among them."""
    params = list(command.params)
    if ctx is not None and (help_option := command.get_help_option(ctx)) is not None:
        params.append(help_option)
    return [name for param in params for name in (*param.opts, *param.secondary_opts)
            if name.startswith("--")]
