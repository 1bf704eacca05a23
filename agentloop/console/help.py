"""`--help` in sections, with examples: click's own help writer (enough for a few titled lists,
so no extension to depend on), the options grouped by one table that says which section each
option of cli.py is in."""

from __future__ import annotations

import os
import sys
from typing import Sequence

import click
import click.formatting

Sections = Sequence[tuple[str, Sequence[str]]]  # (section title, the parameters' names in it)

# A parameter missing from the table still shows, under this title, so a new option is never
# hidden; tests/cli/test_help.py fails until it has a section of its own.
UNSORTED = "Other options"
COLUMN = 30  # the widest first column; a longer option's help starts on the next line

# Which --help section each option is in, by its parameter name: one place, so an option added
# to agentloop.options.table needs one word here too (tests/cli/test_help.py fails until it has
# its section).
SECTIONS = (
    ("Modes (without one: run the tasks)", ("dry_run", "status", "init", "rehearse", "reset",
                                             "yes", "stop_after_running")),
    ("Which tasks", ("task", "group", "again", "ignore_deps", "include_optional",
                     "tick_boxes")),
    ("Agent", ("agent", "agent_program", "model", "iterations", "retry_model", "distill_model",
               "distill", "sandbox", "sandbox_hide")),
    ("Version control", ("vcs", "allow_dirty", "parallel")),
    ("Where the agent works (your checkout, its lane)", ("workplace", "lane_copy", "lane_link",
                                                         "lane_setup", "lane_wait")),
    ("Running in CI (one group a job, integrated after)", ("push", "integrate", "from_remote")),
    ("Checks and review", ("check", "check_timeout", "check_rounds", "require_changes",
                           "git_hooks", "review", "review_model", "max_review_rounds")),
    ("Limits and budget", ("budget", "task_budget", "prices", "task_timeout", "max_attempts",
                           "max_failures", "max_limit_waits", "backoff", "sleep")),
    ("Settings, hooks and the agent's environment", ("show_settings", "on_finish", "on_task",
                                                     "hook_timeout", "env", "env_exclude")),
    ("Dashboard, report and notices", ("serve", "serve_port", "serve_host", "report",
                                       "notify")),
    ("Output", ("as_json", "follow", "version", "help")),
)

EXAMPLES = (
    ("agent-loop tasks.md --init", "Write a commented example plan"),
    ("agent-loop tasks.md --dry-run", "See which tasks would run, and how the plan was read"),
    ("agent-loop tasks.md --rehearse", "Try the whole loop offline, for free"),
    ("agent-loop tasks.md --check 'pytest -q' --review --budget 5",
     "Each task held to a check and a reviewer; no task starts past $5 spent"),
    ("agent-loop tasks.md --status", "See each task's status, change and cost"),
    ("agent-loop tasks.md --task 3 --again", "Run task 3 once more, in a new change"),
)


class _Context(click.Context):
    """click's context, with the help's width found as click finds it but without shutil:
    click imports shutil for its get_terminal_size, and shutil loads zlib, bz2 and lzma for its
    archives, a tenth of --help's start (tests/cli/test_startup.py)."""

    def make_formatter(self) -> click.HelpFormatter:
        """click's HelpFormatter, as wide as click would make it."""
        width = self.terminal_width
        if width is None:
            width = click.formatting.FORCED_WIDTH
        if width is None:
            most = self.max_content_width or 80
            width = max(min(_columns(), most) - 2, 50)
        return self.formatter_class(width=width, max_width=self.max_content_width)


def _columns() -> int:
    """The terminal's columns as shutil.get_terminal_size says them: $COLUMNS when it is a
    positive number, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, closed, or not a terminal
        return 80


class SectionedCommand(click.Command):
    """A command whose --help lists its options section by section and ends with examples."""

    context_class = _Context

    def __init__(self, *args: object, sections: Sections = SECTIONS,
                 examples: Sequence[tuple[str, str]] = EXAMPLES, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sections = sections
        self.examples = examples

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each section's options under its title, in the table's order."""
        helps = self.get_help_option(ctx)
        records = {"help" if p is helps else p.name: p.get_help_record(ctx)
                   for p in self.get_params(ctx) if not isinstance(p, click.Argument)}
        # One first column for every section, so the sections read as one table.
        width = min(COLUMN, max((len(r[0]) for r in records.values() if r), default=0))
        for title, names in [*self.sections, (UNSORTED, [n for n in records
                                                          if n not in section_of(self.sections)])]:
            rows = [(r[0].ljust(width), r[1]) for n in names if (r := records.get(n))]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows, col_max=COLUMN)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The examples, as commands to copy, each with what it does."""
        if not self.examples:
            return
        with formatter.section("Examples"):
            for command, what in self.examples:
                formatter.write_text(f"{what}:")
                with formatter.indentation():
                    formatter.write(f"{' ' * formatter.current_indent}{command}\n")
        formatter.write_paragraph()
        if self.epilog:
            formatter.write_text(self.epilog)
            formatter.write_paragraph()
        formatter.write_text("The manual is in agent-loop's repository: the README (a quick "
                             "start), then docs/index.md.")


def section_of(sections: Sections) -> dict[str, str]:
    """Each parameter's section title, by the parameter's name."""
    return {name: title for title, names in sections for name in names}
