"""`--status` answered before click is imported (agentloop.console.quick): it must read every
argument list it takes exactly as click does, and leave every other one to click."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.cli import command
from agentloop.console import quick
from agentloop.options.record import RunOptions, usage_problem


def by_click(args: list[str]) -> tuple[Path | None, RunOptions]:
    """The plan and the options the click command line makes of `args`."""
    ctx = command.make_context("agent-loop", list(args))
    params = dict(ctx.params)
    return params.pop("tasks_md"), RunOptions.from_params({**params, "command": tuple(args)})


@pytest.mark.parametrize("args", [
    ["tasks.md", "--status"], ["--status", "tasks.md"], ["--status"], ["--status", "--json"],
    ["plans/a b.md", "--json", "--status"], ["--rehearse", "--status", "tasks.md"],
    ["tasks.md", "--status", "--rehearse", "--json"]])
def test_a_plain_status_reads_as_click_reads_it(args: list[str]) -> None:
    found = quick.status_request(args)
    assert found is not None
    plan, flags = found
    options = RunOptions(**flags, command=tuple(args))
    clicked, by = by_click(args)
    assert plan == clicked and vars(options) == vars(by)   # RunOptions has no __eq__: its fields
    # So it needs no check of how the options go together: these never conflict.
    assert usage_problem(options) is None


@pytest.mark.parametrize("args", [
    ["tasks.md"], ["tasks.md", "--dry-run"], ["tasks.md", "--status", "--follow"],
    ["tasks.md", "--status", "--show-settings"], ["a.md", "b.md", "--status"],
    ["--status", "--status", "tasks.md"], ["--status", "-h"], ["--status", "--", "-odd.md"],
    ["--status", "--json=1"], ["", "--status"], ["--status", "--rehearse"], []])
def test_anything_else_goes_to_click(args: list[str]) -> None:
    assert quick.status_request(args) is None
