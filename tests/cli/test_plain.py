"""A plain run's command line read without click (agentloop.console.plain): it reads every
command line it takes exactly as click does, leaves every other one to click, and a plain run
imports no click at all, on its way to the first agent or on a stop's way out."""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import click
import pytest

from agentloop.agents import AGENTS
from agentloop.cli import command
from agentloop.console import plain
from agentloop.options.table import BY_NAME, OPTIONS, Option
from agentloop.settings.merge import resolve
from tests.support.audit import audited_run, watched
from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo

# Values to try for each kind of option: what plain reads, and what it must leave to click
# (click reads `1e3`, ` 3` and `.5` as numbers, refuses `-1` or `9` where a range forbids them).
TRIES = {
    "text": ["x", "pytest -q", "", "=x"],
    "int": ["0", "1", "2", "5", "10", "11", "07", "1.5", " 3", "-1", "65535", "65536", "x",
            "9" * 5000],  # more digits than Python's int() takes from text: click refuses it
    "float": ["0", "1", "2.5", "30", "1e3", ".5", "5.", "-1", "nan", "inf", "0.5"],
    "duration": ["0", "90", "1.5", "10m", "1h", "-1", "x"],
    "choice": ["nope", "AUTO"],
    "agent": ["rehearse", "nope", *AGENTS],
    "assignment": ["A=1", "1=A", "x"],
    "model_rates": ["m=1/2/3", "m=x"],
    "variable_name": ["A", "1A"],
}


def kind(option: Option) -> str:
    return option.type.kind if option.type is not None else "text"


def words(option: Option) -> list[list[str]]:
    """Each way of writing `option` once on a command line, from the option table."""
    if option.is_flag:
        return [[w] for w in (*option.opts, *option.secondary)]
    values = [*TRIES[kind(option)], *(option.type.choices if option.type is not None else ())]
    return [[w, v] for w in option.opts for v in values] + \
        [[f"{option.opts[0]}={values[0]}"], [option.opts[0]]]


def command_lines() -> list[list[str]]:
    """Every option alone in each of its ways, then mixes of them (seeded), a plan beside each
    or not."""
    each = [w for option in OPTIONS for w in words(option)]
    lines = [["tasks.md", *w] for w in each] + [[*w, "tasks.md"] for w in each]
    rng = random.Random(20261128)
    for _ in range(400):
        picked = rng.sample(each, rng.randint(2, 6))
        line = list(itertools.chain.from_iterable(picked))
        line.insert(rng.randint(0, len(line)), "tasks.md")
        lines.append(line)
    lines += [[], ["tasks.md"], ["tasks.md", "other.md"], ["--", "tasks.md"], ["-"],
              ["tasks.md", "--help"], ["tasks.md", "-h"], ["tasks.md", "--version"],
              ["tasks.md", "--check", "a", "--check", "b", "--task", "3", "--task", "4-5"],
              ["tasks.md", "--vcs", "git", "--vcs", "jj"], ["tasks.md", "--review", "--no-review"],
              ["tasks.md", "--max", "3"], ["tasks.md", "--vcs", "--model"]]
    return lines


def typed(value: Any) -> Any:
    """A value with its type, so that 5 and 5.0 differ as click's values do."""
    if isinstance(value, tuple):
        return ("tuple", tuple(typed(v) for v in value))
    return (type(value).__name__, value)


def by_click(args: list[str]) -> tuple[Path | None, dict[str, Any], set[str]] | None:
    """What click's command hands over for `args`, or None where click refuses them."""
    try:
        ctx = command.make_context("agent-loop", list(args))
    except (click.ClickException, click.exceptions.Exit):
        return None
    params = dict(ctx.params)
    plan = params.pop("tasks_md")
    given = {name for name in params
             if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
    return plan, params, given


def test_the_plain_door_reads_each_command_line_it_takes_as_click_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- a task\n")
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "no-config")}
    taken: set[str] = set()
    lines = command_lines()
    for args in lines:
        ours = plain.request(args)
        if ours is None:
            continue
        theirs = by_click(args)
        assert theirs is not None, f"{args}: click refuses what plain takes"
        assert ours[0] == theirs[0] and ours[2] == theirs[2], args
        assert {k: typed(v) for k, v in ours[1].items()} == \
            {k: typed(v) for k, v in theirs[1].items()}, args
        one, other = (resolve(values, given, Path("tasks.md"), tmp_path, environ)
                      for _, values, given in (ours, theirs))
        assert one.rows == other.rows, args
        taken |= ours[2]
    # Every option comes this way, given a value click takes as it is written.
    every = {o.name for o in OPTIONS}
    assert every <= taken, sorted(every - taken)
    assert plain.request(["tasks.md", "--vcs", "git", "--no-distill"]) is not None
    assert len(lines) > 1000


def test_plain_names_each_option_as_click_does() -> None:
    names = [p.name for p in command.params if isinstance(p, click.Option) and p.expose_value]
    assert names == [o.name for o in OPTIONS]
    for param in command.params:
        if isinstance(param, click.Option) and param.expose_value:
            option = BY_NAME[param.name]
            assert (option.opts, option.secondary, option.is_flag, option.multiple) == \
                (param.opts, param.secondary_opts, param.is_flag, param.multiple), param.name


def test_an_unreadable_plan_goes_to_click(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- a task\n")
    real = os.access

    # Root reads every file: the look both doors take (os.access) answers as it would a user
    # whose plan is not readable to them.
    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        if os.fspath(path).endswith("tasks.md") and mode & os.R_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    assert plain.request(["tasks.md"]) is None
    assert by_click(["tasks.md"]) is None


@pytest.mark.parametrize("args", [["--vcs", "git", "--review", "--max-attempts", "2"],
                                  ["--no-distill", "--check", "true", "--budget", "3.5"],
                                  ["--agent", "codex", "--parallel", "2", "--sandbox"]])
def test_both_doors_give_the_same_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           args: list[str]) -> None:
    """The command line over the plan's table over the project's file over the user's."""
    work = make_repo(tmp_path / "project", "git", plan="- first\n")
    (work / "agent-loop.toml").write_text(
        'review = true\nmax-attempts = 3\ncheck = ["false"]\nbudget = 9\n'
        '[plans."tasks.md"]\nvcs = "jj"\nparallel = 3\n')
    config = tmp_path / "config"
    (config / "agent-loop").mkdir(parents=True)
    (config / "agent-loop" / "config.toml").write_text('model = "m"\nsandbox = false\n')
    monkeypatch.chdir(work)
    environ = {"XDG_CONFIG_HOME": str(config), "AGENT_LOOP_TASK_BUDGET": "1"}
    ours, theirs = plain.request(["tasks.md", *args]), by_click(["tasks.md", *args])
    assert ours is not None and theirs is not None
    one, other = (resolve(values, given, Path("tasks.md"), work, environ)
                  for _, values, given in (ours, theirs))
    assert one.rows == other.rows and one.files == other.files
    assert {k: typed(v) for k, v in one.values.items()} == \
        {k: typed(v) for k, v in other.values.items()}
    assert str(next(r.origin for r in one.rows if r.key == "vcs")) == \
        ("flag --vcs" if "--vcs" in args else "agent-loop.toml:6")


def test_a_plain_run_imports_no_click(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    lines = audited_run(work, tmp_path)
    assert any(line.startswith("process ") and "stream-json" in line for line in lines)
    assert "import agentloop.console.plain" in lines, "is the run watched?"
    clicks = [line for line in lines if line.split()[:2] == ["import", "click"]]
    assert not clicks, "a plain run imports click"
    assert (work / "a.txt").read_text().strip() == "A"


def test_a_run_with_settings_imports_no_click(tmp_path: Path, fake_claude: FakeClaude,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A settings file, the user's, AGENT_LOOP_* variables, values of every usual kind, and
    # --reset off a terminal (no one to ask): click's types check none of them.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    (work / "agent-loop.toml").write_text(
        'max-attempts = 3\nbudget = 9.5\nlane-wait = "10m"\nenv = { A = "1" }\n'
        'env-exclude = ["SECRET"]\nprices = { "m" = "1/2/3" }\nagent = "claude"\n'
        '[plans."tasks.md"]\nworkplace = "lane"\n')
    config = tmp_path / "config"
    (config / "agent-loop").mkdir(parents=True)
    (config / "agent-loop" / "config.toml").write_text('model = "m"\nreview = false\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    for name, value in [("AGENT_LOOP_MAX_FAILURES", "4"), ("AGENT_LOOP_TICK_BOXES", "false"),
                        ("AGENT_LOOP_TASK_TIMEOUT", "600"), ("AGENT_LOOP_CHECK", "true")]:
        monkeypatch.setenv(name, value)
    for name, extra in (("first", []), ("again", ["--reset"])):
        (tmp_path / name).mkdir()
        lines = audited_run(work, tmp_path / name, extra=extra)
        assert any(line.startswith("process ") and "stream-json" in line for line in lines)
        assert "import agentloop.settings.schema" in lines, "were the settings read?"
        clicks = [line for line in lines if line.split()[:2] == ["import", "click"]]
        assert not clicks, f"a run with settings {extra} imports click"
    assert (work / "a.txt").read_text().strip() == "A"



def test_a_plain_run_stopped_imports_no_click_on_its_way_out(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A module first imported on a stop's path can hang that stop (tests/run/test_interrupts.py):
    # the stop of a run that never imported click must not import it either.
    work = make_repo(tmp_path / "project", "git",
                     plan="- first\n  FAKE: sleep 30\n  FAKE: write a.txt A\n")
    seen = tmp_path / "seen.txt"
    child = subprocess.Popen(watched(seen), cwd=work,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
            seen.exists() and "stream-json" in seen.read_text()):
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, out + err
    assert "Resume with" in err, err
    lines = seen.read_text().splitlines()
    assert "import agentloop.console.plain" in lines
    assert not [line for line in lines if line.split()[:2] == ["import", "click"]]
