"""Options once: built straight from click, and what cannot work is refused at the door."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.options.record import RunOptions, task_numbers, usage_problem
from tests.support.runner import agent_loop


def test_every_option_is_a_click_parameter_of_the_same_name() -> None:
    params = {p.name for p in command.params} - {"tasks_md", "version"}
    # `only` is no option: the tasks --task or --group select, resolved once the plan is read;
    # `command` is the arguments as given, and `agent_given` whether --agent was among them,
    # which the CLI adds.
    assert params == {f.name for f in fields(RunOptions)} - {"only", "command", "agent_given"}


def test_defaults_agree_with_click() -> None:
    ctx = command.make_context("agent-loop", ["tasks.md"])
    # RunOptions has no __eq__ of its own (nothing in a run compares options): their fields.
    assert vars(RunOptions.from_params(ctx.params)) == vars(RunOptions())


@pytest.mark.parametrize("args, words", [
    (["--json"], "--json goes with --status or --dry-run"),
    (["--follow"], "--follow goes with --status"),
    (["--again"], "--again goes with --task"),
    (["--status", "--dry-run"], "cannot be combined"),
    (["--status", "--follow", "--json"], "cannot be combined with --json"),
    (["--review", "--vcs", "none"], "--review needs version control"),
    (["--review", "--vcs", "none", "--dry-run"], "--review needs version control"),
    (["--require-changes", "--vcs", "none", "--dry-run"], "--require-changes needs version"),
    (["--task", "5-3"], "the range 5-3 is empty; write it low to high (3-5)"),
    (["--task", "6-"], "not a task number, range or list"),
    (["--task", "0", "--dry-run"], "tasks are numbered from 1"),
    (["--task", "1", "--group", "A"], "--task and --group cannot be combined"),
    (["--again", "--dry-run"], "--again goes with --task or --group"),
    (["--rehearse", "--agent", "codex"], "cannot be combined with --agent"),
])
def test_what_cannot_work_is_exit_2_before_anything_is_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], words: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n")
    result = CliRunner().invoke(command, ["tasks.md", *args])
    assert result.exit_code == 2, result.output
    assert words in result.stderr and result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.md"]


def test_combinations_that_work_pass() -> None:
    for options in (RunOptions(status=True, as_json=True), RunOptions(dry_run=True, as_json=True),
                    RunOptions(task=("2",), again=True), RunOptions(group="2", again=True),
                    RunOptions(review=True, vcs="git"),
                    RunOptions(review=True, vcs="none", status=True)):
        assert usage_problem(options) is None, options


@pytest.mark.parametrize("specs, numbers", [
    (("6", "7"), (6, 7)), (("3-5,8",), (3, 4, 5, 8)), (("6-7",), (6, 7)),
    (("8", "3-5", " 4 , 2"), (2, 3, 4, 5, 8)), ((), ())])
def test_task_numbers_read_numbers_ranges_and_lists(specs: tuple[str, ...],
                                                    numbers: tuple[int, ...]) -> None:
    assert task_numbers(specs) == numbers


@pytest.mark.parametrize("args, line", [
    (["tasks.md", "--frobnicate"],
     "no such option: --frobnicate (`agent-loop --help` lists the options)"),
    (["tasks.md", "--parralel", "2"], "no such option: --parralel (did you mean --parallel?)"),
    (["tasks.md", "--dryrun"], "no such option: --dryrun (did you mean --dry-run?)"),
    (["tasks.md", "--budget"], "Option '--budget' requires an argument."),
    ([], "Missing argument 'TASKS_MD' (only --status and --serve work without one)."),
    # `nan` passed the range (every comparison with it is false): a budget of $nan ran with
    # no budget at all, said as `budget: $nan` by --dry-run.
    (["tasks.md", "--budget", "nan"], "Invalid value for '--budget': 'nan' is not a number."),
    (["tasks.md", "--task-timeout", "NaN"],
     "Invalid value for '--task-timeout': 'NaN' is not a number."),
    # `inf` passed it too: a budget shown as `$inf`, which is no budget either.
    (["tasks.md", "--budget", "inf"],
     "Invalid value for '--budget': 'inf' is not a finite number."),
    (["tasks.md", "--task-timeout", "Infinity"],
     "Invalid value for '--task-timeout': 'Infinity' is not a finite number."),
    # A cap of $0 on each agent run stopped every run after its first paid turn, retried.
    (["tasks.md", "--task-budget", "0"],
     "Invalid value for '--task-budget': 0.0 is not in the range x>0."),
])
def test_a_command_line_click_cannot_read_is_one_line_and_exit_2(
        tmp_path: Path, args: list[str], line: str) -> None:
    (tmp_path / "tasks.md").write_text("- one\n")
    done = agent_loop(tmp_path, *args, plan=None)
    assert (done.returncode, done.stderr, done.stdout) == (2, f"agent-loop: error: {line}\n", "")
    as_json = agent_loop(tmp_path, "--json", *args, plan=None)
    assert as_json.returncode == 2 and as_json.stderr == f"agent-loop: error: {line}\n"
    assert orjson.loads(as_json.stdout) == {"schema": 1, "error": line, "exit_code": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.md"]
