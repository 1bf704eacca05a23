"""Settings: the five sources in their order, per-plan tables, --show-settings, and every kind of
bad setting refused in one line before anything runs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from agentloop.cli import command
from agentloop.options.record import EVENT_PREFIX
from agentloop.settings.keys import KEYS, env_name, param
from tests.support.runner import agent_loop


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository (the project root) with a plan, and a user config folder."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "tasks.md").write_text("- one\n- two\n")
    return root


def shown(cwd: Path, *args: str, env: dict[str, str] | None = None,
          plan: str = "tasks.md") -> dict[str, dict[str, Any]]:
    """--show-settings --json, by key."""
    done = agent_loop(cwd, "--show-settings", "--json", *args,
                      env={**os.environ, **(env or {})}, plan=plan)
    assert done.returncode == 0, done.stderr
    return {row["key"]: row for row in json.loads(done.stdout)["settings"]}


def user_config(text: str) -> Path:
    folder = Path(os.environ["HOME"]) / ".config" / "agent-loop"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)
    return folder / "config.toml"


def origin(row: dict[str, Any]) -> tuple[Any, ...]:
    o = row["origin"]
    return (o["kind"], o["name"], o["line"])


def test_each_source_wins_over_the_ones_below_it(repo: Path) -> None:
    user_config("model = 'user'\nsleep = 1\nbackoff = 2\nmax-failures = 4\niterations = 5\n")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.agent-loop]\n"
                                         "sleep = 11\nbackoff = 12\nmax-failures = 14\n")
    (repo / "agent-loop.toml").write_text("# the team's\nbackoff = 22\nmax-failures = 24\n")
    rows = shown(repo, "--max-failures", "9", env={"AGENT_LOOP_BACKOFF": "33",
                                                   "AGENT_LOOP_MAX_FAILURES": "34"})
    user = str(Path(os.environ["HOME"]) / ".config" / "agent-loop" / "config.toml")
    assert (rows["iterations"]["value"], origin(rows["iterations"])) == (5, ("file", user, 5))
    assert (rows["sleep"]["value"], origin(rows["sleep"])) == (11, ("file", "pyproject.toml", 5))
    assert (rows["max-failures"]["value"], origin(rows["max-failures"])) == (
        9, ("flag", "--max-failures", None))
    assert (rows["backoff"]["value"], origin(rows["backoff"])) == (
        33, ("env", "AGENT_LOOP_BACKOFF", None))
    assert origin(rows["model"]) == ("file", user, 1)
    assert origin(rows["vcs"]) == ("default", None, None) and rows["vcs"]["value"] == "auto"
    assert (rows["env"]["value"], rows["check"]["value"]) == ({}, [])
    # agent-loop.toml wins over pyproject.toml key by key
    del_env = shown(repo)
    assert (del_env["backoff"]["value"], origin(del_env["backoff"])) == (
        22, ("file", "agent-loop.toml", 2))


def test_a_plans_table_wins_in_its_file_for_that_plan_only(repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "more.md").write_text("- three\n")
    (repo / "agent-loop.toml").write_text(
        'budget = 20\nmodel = "sonnet"\n\n[plans."docs/more.md"]\nbudget = 5\n'
        '[plans."./tasks.md"]\nreview = true\n')
    user_config('[plans."docs/more.md"]\nmodel = "haiku"\nsleep = 3\n')
    more = shown(repo / "docs", plan="more.md")
    assert (more["budget"]["value"], origin(more["budget"])) == (
        5, ("file", str(repo / "agent-loop.toml"), 5))
    assert more["model"]["value"] == "sonnet"   # the project file wins over the user's plan table
    assert more["sleep"]["value"] == 3 and more["review"]["value"] is False
    tasks = shown(repo)
    assert tasks["budget"]["value"] == 20 and tasks["review"]["value"] is True
    assert tasks["sleep"]["value"] == 0


def test_a_plans_table_that_names_no_plan_is_said(repo: Path, fake_claude: Any) -> None:
    # A typo in a table's plan: its budget applied to no plan, and nothing said so.
    (repo / "agent-loop.toml").write_text('budget = 20\n\n[plans."taks.md"]\nbudget = 5\n'
                                          '[plans."tasks.md"]\nreview = false\n')
    user_config('[plans."elsewhere/tasks.md"]\nbudget = 1\n')   # the user's: any repository
    done = agent_loop(repo, "--vcs", "none", "--dry-run")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "names no plan" in line]
    assert said == ['warning: agent-loop.toml:3: [plans."taks.md"] names no plan in this '
                    "repository: its settings apply to none"]
    assert not fake_claude.calls()


def test_flags_turn_a_files_boolean_off_and_replace_its_list(repo: Path) -> None:
    (repo / "agent-loop.toml").write_text(
        'review = true\ndistill = false\ncheck = ["pytest -q", "ruff check ."]\n'
        'env = { TOKEN_A = "a", DEBUG = 1 }\nenv_exclude = ["SECRET"]\n')
    rows = shown(repo, "--no-review", "--distill", "--check", "make test")
    assert rows["review"]["value"] is False and origin(rows["review"])[:2] == ("flag",
                                                                              "--no-review")
    assert rows["distill"]["value"] is True
    assert rows["check"]["value"] == ["make test"]
    assert rows["env"]["value"] == {"TOKEN_A": "a", "DEBUG": "1"}
    assert (rows["env-exclude"]["value"], origin(rows["env-exclude"])) == (
        ["SECRET"], ("file", "agent-loop.toml", 5))   # written with an underscore: found too
    listed = shown(repo, env={"AGENT_LOOP_CHECK": "'pytest -q' \"ruff check .\"",
                              "AGENT_LOOP_REVIEW": "no", "AGENT_LOOP_ENV": "A=1 'B=two words'"})
    assert listed["check"]["value"] == ["pytest -q", "ruff check ."]
    assert listed["review"]["value"] is False
    assert listed["env"]["value"] == {"A": "1", "B": "two words"}
    (repo / "agent-loop.toml").write_text('model = "opus"\ncheck = ["make test"]\n')
    emptied = shown(repo, env={"AGENT_LOOP_MODEL": "", "AGENT_LOOP_CHECK": ""})
    assert emptied["model"]["value"] == "opus"   # an empty variable sets nothing…
    assert emptied["check"]["value"] == []       # …but a list, which it empties


def test_the_old_no_distill_flag_still_works(repo: Path) -> None:
    assert shown(repo, "--no-distill")["distill"]["value"] is False


def test_show_settings_as_text_names_every_origin(repo: Path) -> None:
    (repo / "agent-loop.toml").write_text("\nbudget = 20\n")
    done = agent_loop(repo, "--show-settings", "--model", "opus",
                      env={**os.environ, "AGENT_LOOP_SLEEP": "2"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("agent-loop.toml:2") and line.endswith("budget = 20")
               for line in lines), done.stdout
    assert any(line.startswith("flag --model") and line.endswith('model = "opus"')
               for line in lines)
    assert any(line.startswith("env AGENT_LOOP_SLEEP") and line.endswith("sleep = 2")
               for line in lines)
    assert any(line.startswith("default") and line.endswith("vcs = \"auto\"") for line in lines)
    assert not (repo / ".agent-loop").exists()   # it only shows


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """One line, exit 2, no traceback, nothing written."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("agent-loop: settings: "), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.mark.parametrize("text, words", [
    ("budget = 20\ncheck = [\"a\",\n", ["agent-loop.toml:3:1", "not valid TOML"]),
    ("model = sonnet\n", ["agent-loop.toml:1:9", "not valid TOML"]),
    ("\nbugdet = 20\n", ["agent-loop.toml:2: unknown setting 'bugdet'", "did you mean 'budget'"]),
    ("dry-run = true\n", ["unknown setting 'dry-run'"]),
    ("review = \"yes\"\n", ["agent-loop.toml:1", "review takes true or false"]),
    ("max-attempts = 9\n", ["agent-loop.toml:1", "9 is not in the range 1<=x<=5"]),
    ("max-attempts = 2.5\n", ["max-attempts", "a whole number, 1<=x<=5"]),
    ("vcs = \"svn\"\n", ["'svn' is not one of", "'git'"]),
    ("check = [1]\n", ["check takes a list of strings"]),
    ('[plans."tasks.md"]\nretry-modle = "x"\n', ["agent-loop.toml:2", "did you mean "
                                                 "'retry-model'"]),
    ("env = { 'A B' = 'x' }\n", ["'A B' is not a variable name"]),
    # A NUL no command, argument or variable can hold: the run crashed as the agent, a check
    # or the hook started (internal error, exit 3).
    ('env = { A = "x\\u0000y" }\n', ["agent-loop.toml:1", "env holds a NUL character"]),
    ('check = ["pytest\\u0000 -q"]\n', ["agent-loop.toml:1", "check holds a NUL character"]),
    ('model = "op\\u0000us"\n', ["agent-loop.toml:1", "model holds a NUL character"]),
    # TOML takes a whole number of any size; one no float holds is refused, not a crash.
    ("budget = " + "9" * 400 + "\n", ["agent-loop.toml:1", "budget takes a number, x>=0"]),
    ("lane-wait = " + "9" * 400 + "\n", ["agent-loop.toml:1", "lane-wait takes seconds"]),
    ("budget = nan\n", ["agent-loop.toml:1", "budget takes a number, x>=0"]),
    ("budget = inf\n", ["agent-loop.toml:1", "budget takes a number, x>=0"]),
    ("task-budget = 0\n", ["agent-loop.toml:1", "task-budget takes a number, x>0"]),
])
def test_a_bad_file_is_one_line_before_anything_runs(repo: Path, fake_claude: Any, text: str,
                                                     words: list[str]) -> None:
    (repo / "agent-loop.toml").write_text(text)
    done = agent_loop(repo, "--vcs", "none")
    refused(done, *words)
    assert not fake_claude.calls() and not (repo / ".agent-loop").exists()


def test_bad_pyproject_table_and_user_file_name_their_file(repo: Path) -> None:
    (repo / "pyproject.toml").write_text("[tool.agent-loop]\nsleep = -1\n")
    refused(agent_loop(repo), "pyproject.toml:2", "sleep", "x>=0")
    (repo / "pyproject.toml").unlink()
    user = user_config("iterations = 'many'\n")
    refused(agent_loop(repo), f"{user}:1", "iterations")


@pytest.mark.parametrize("name, value, words", [
    ("AGENT_LOOP_BUDGET", "lots", ["environment AGENT_LOOP_BUDGET", "'lots' is not a valid"]),
    ("AGENT_LOOP_REVIEW", "maybe", ["environment AGENT_LOOP_REVIEW", "true or false"]),
    ("AGENT_LOOP_CHECK", "'unclosed", ["environment AGENT_LOOP_CHECK", "shell-like line"]),
])
def test_a_bad_variable_is_one_line(repo: Path, name: str, value: str, words: list[str]) -> None:
    refused(agent_loop(repo, env={**os.environ, name: value}), *words)


def test_other_agent_loop_variables_are_no_settings(repo: Path) -> None:
    """The agent programs' variables, a hook's, and other tools' are never read as settings."""
    rows = shown(repo, env={"AGENT_LOOP_CLAUDE": "/bin/claude-x", "AGENT_LOOP_TOOLS": "/x",
                            EVENT_PREFIX + "RESULT": "done", EVENT_PREFIX + "EXIT_CODE": "4"})
    assert all(r["origin"]["kind"] == "default" for r in rows.values())
    assert not any(key.startswith("event") for key in KEYS)   # the hook prefix stays free


def test_every_key_is_an_option_and_no_mode_is_a_key() -> None:
    options = {p.name: p for p in command.params if isinstance(p, click.Option)}
    assert all(param(k) in options for k in KEYS)
    for mode in ("reset", "again", "dry_run", "status", "init", "rehearse", "only", "as_json",
                 "follow", "show_settings"):
        assert mode not in {param(k) for k in KEYS}
    for key in KEYS:  # every boolean can be turned off for one run
        option = options[param(key)]
        if option.is_flag:
            assert option.secondary_opts == [f"--no-{key}"], key
    assert env_name("check-timeout") == "AGENT_LOOP_CHECK_TIMEOUT"


def test_the_settings_reference_publishes_every_key() -> None:
    # docs/reference/settings.md's table, as the docs build writes it from the code
    generator = Path(__file__).resolve().parents[2] / "docs" / "_ext" / "agentloop_reference.py"
    spec = importlib.util.spec_from_file_location("agentloop_reference", generator)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.settings()
    for key in KEYS:
        assert f"| `{key}` |" in table, key


def test_the_example_settings_file_is_valid(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / ".agent-loop.example" / "agent-loop.toml"
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "tasks.md").write_text("- one\n")
    (root / "agent-loop.toml").write_text(example.read_text())
    rows = shown(root)
    assert rows["check"]["origin"]["kind"] == "file"


def test_shell_completion_is_clicks(repo: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "agentloop"], cwd=repo, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "_AGENT_LOOP_COMPLETE": "bash_complete",
                               "COMP_WORDS": "agent-loop tasks.md --vcs ", "COMP_CWORD": "3"})
    assert done.stdout.split() == ["plain,auto", "plain,jj", "plain,git", "plain,none"], done


def test_every_json_document_says_its_schema(repo: Path) -> None:
    # docs/reference/json-output.md: every JSON document has "schema": 1. --show-settings
    # --json had only "settings", "files" and "plan".
    for args, plan in ((("--show-settings",), "tasks.md"), (("--status",), "tasks.md"),
                       (("--status",), None), (("--dry-run", "--vcs", "none"), "tasks.md")):
        done = agent_loop(repo, *args, "--json", plan=plan)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["schema"] == 1, (args, done.stdout)
