"""What a plan's earlier run was held to, and what a plain re-run does with it.

A budget is a promise about money: a re-run without `--budget` keeps the one the plan's run
began with (until `--reset` archives the state). Checks, review and a model are how the work is
done, not what it may cost: a re-run without them runs without them, but says so in one line
with the command that keeps them (a re-run with checks or a model of its own has chosen).

This is one small step on purpose: options from the command line (and, above them, a settings
file once there is one) are merged first; what is remembered only fills a budget still unset,
so it never outranks either.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agentloop.options.record import RunOptions, continue_args

# The option fields a plan's state remembers from its last run.
KEPT = ("budget", "check", "review", "model")


def remember(options: RunOptions) -> dict[str, Any]:
    """What the state keeps of this run's options (only what was set)."""
    kept: dict[str, Any] = {}
    for name in KEPT:
        value = getattr(options, name)
        if value not in (None, False, ()):
            kept[name] = list(value) if isinstance(value, tuple) else value
    return kept


def recall(options: RunOptions, kept: dict[str, Any]) -> tuple[RunOptions, str | None]:
    """The options with the remembered budget where none was given, and a note naming the
    checks, review or model the earlier run had and this one drops (None: it drops none)."""
    budget = kept.get("budget")
    if options.budget is None and isinstance(budget, (int, float)):
        options = replace(options, budget=float(budget))
    dropped: list[str] = []
    if kept.get("review") and not options.review:
        dropped.append("--review")
    # Checks of its own (a flag, a settings file changed on purpose) are this run's choice,
    # as a model of its own is: only a run with none drops the last run's.
    if not options.check:
        for check in kept.get("check") or ():
            dropped += ["--check", str(check)]
    if kept.get("model") and options.model is None:
        dropped += ["--model", str(kept["model"])]
    if not dropped:
        return options, None
    import shlex  # a note only when this run drops what the last one had

    command = shlex.join(["agent-loop", *continue_args(options.command), *dropped])
    return options, (f"the last run of this plan had {shlex.join(dropped)}, which this run "
                     f"goes without; to keep them: {command}")

