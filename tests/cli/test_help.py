"""`--help` in sections with examples, every option in the options reference
(docs/reference/options.md, its table written from the code), and a help that stays fast (nothing
heavy imported before parsing)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.console.help import SECTIONS, UNSORTED

GENERATOR = Path(__file__).resolve().parents[2] / "docs" / "_ext" / "agentloop_reference.py"


def options() -> dict[str, click.Parameter]:
    """Every option of the command by its parameter name, --help as "help"."""
    ctx = command.make_context("agent-loop", ["tasks.md"])
    helps = command.get_help_option(ctx)
    return {"help" if p is helps else str(p.name): p for p in command.get_params(ctx)
            if isinstance(p, click.Option)}


def test_every_option_has_exactly_one_section() -> None:
    listed = [name for _, names in SECTIONS for name in names]
    assert sorted(listed) == sorted(set(listed)), "an option is in two sections"
    assert set(listed) == set(options()), "an option has no section in cli.SECTIONS (or a " \
                                          "section names an option that is gone)"


def test_help_shows_its_sections_and_examples_in_order() -> None:
    result = CliRunner().invoke(command, ["--help"], terminal_width=100)
    assert result.exit_code == 0
    out = result.output
    titles = [title for title, _ in SECTIONS] + ["Examples"]
    places = [out.index(f"\n{title}:\n") for title in titles]
    assert places == sorted(places)
    assert UNSORTED not in out
    modes = out[places[0]:places[1]]
    assert "--dry-run" in modes and "--rehearse" in modes and "--budget" not in modes
    assert "agent-loop tasks.md --rehearse" in out
    # the metavars name what a value is, as the options reference does
    assert "--budget USD" in out and "--task-timeout SECONDS" in out and "RANGE" not in out


@pytest.mark.parametrize("columns, width", [("60", 58), ("200", 78), ("", 78), ("x", 78)])
def test_help_is_as_wide_as_click_makes_it_for_the_terminal(columns: str, width: int) -> None:
    # COLUMNS as a terminal sets it (the width less two, at most 78, at least 50); none or
    # nonsense, off a terminal: 80 columns, as shutil.get_terminal_size says.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run([sys.executable, "-m", "agentloop", "--help"], capture_output=True,
                          text=True, env={**env, "COLUMNS": columns}, timeout=60)
    assert done.returncode == 0, done.stderr
    click_s = CliRunner().invoke(command, ["--help"], prog_name="agent-loop",
                                 terminal_width=width)
    assert done.stdout == click_s.output
    other = 58 if width == 78 else 78   # the width tells: the text is wrapped otherwise
    assert done.stdout != CliRunner().invoke(command, ["--help"], prog_name="agent-loop",
                                             terminal_width=other).output


def test_agent_rehearse_is_refused_with_the_mode_to_use() -> None:
    result = CliRunner().invoke(command, ["tasks.md", "--agent", "rehearse"])
    assert result.exit_code == 2
    assert "a rehearsal is a mode, not an agent: use --rehearse" in result.output
    shown = CliRunner().invoke(command, ["--help"]).output
    assert "[claude|codex]" in shown and "rehearse]" not in shown


def reference_option_table() -> list[str]:
    """The first cells of the options reference's tables, as the docs build writes them."""
    spec = importlib.util.spec_from_file_location("agentloop_reference", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [re.split(r"(?<!\\)\|", line)[1] for line in module.options().splitlines()
            if line.startswith("| `-")]


def test_the_options_reference_lists_every_option_and_no_other() -> None:
    cells = reference_option_table()
    spans = [span for cell in cells for span in re.findall(r"`([^`]+)`", cell)]
    named = {flag for span in spans for flag in re.findall(r"(?<![\w-])-{1,2}[a-z][-a-z]*", span)}
    for param in options().values():
        assert isinstance(param, click.Option)
        longest = max(param.opts, key=len)
        assert longest in named, f"the options reference has no row for {longest}"
    real = {flag for p in options().values() for flag in p.opts + p.secondary_opts}
    assert named <= real, f"the options reference names options that do not exist: " \
                          f"{sorted(named - real)}"


def test_help_and_version_import_nothing_heavy() -> None:
    # --help and --version answer before the run's modules (and rich) are imported.
    probe = ("import sys\nfrom agentloop.cli import command\n"
             "for args in (['--help'], ['--version']):\n"
             "    try:\n        command.main(args, prog_name='agent-loop')\n"
             "    except SystemExit:\n        pass\n"
             "print(sorted(m for m in sys.modules if m.startswith(('agentloop.', 'rich'))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip().splitlines()[-1]
    for heavy in ("agentloop.app", "agentloop.run", "agentloop.state", "rich", "orjson"):
        assert f"'{heavy}" not in loaded, loaded
