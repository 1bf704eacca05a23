"""The documentation site: it builds with warnings as errors (a broken link, a page in no table of
contents, a missing page all fail), its reference pages list every option, settings key, exit
code and event of the code, the example run's events fit the published schema, the README
stays a short front door whose links lead somewhere, and the version is written once."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import jsonschema
import pytest

from agentloop import __version__, errors
from agentloop.cli import command
from agentloop.run import events
from agentloop.settings.keys import KEYS

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def reference() -> ModuleType:
    """docs/_ext/agentloop_reference.py, the module that writes the reference pages."""
    spec = importlib.util.spec_from_file_location("agentloop_reference",
                                                  DOCS / "_ext" / "agentloop_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def every_flag() -> set[str]:
    """Every spelling of every option of the command, --no- forms included."""
    ctx = command.make_context("agent-loop", ["tasks.md"])
    return {flag for p in command.get_params(ctx) if isinstance(p, click.Option)
            for flag in p.opts + p.secondary_opts}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as scripts/docs.sh and CI build it: warnings are errors."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q",
                           "-b", "html", "-d", str(out / "doctrees"), str(DOCS),
                           str(out / "html")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "html"


def text_of(page: Path) -> str:
    """A built page's words, without its markup."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_the_site_builds_and_has_a_page_of_each_kind(site: Path) -> None:
    for kind in ("tutorials", "how-to", "reference", "explanation"):
        assert (site / kind / "index.html").exists(), kind
    assert (site / "how-to" / "undo.html").exists()


def test_the_options_page_lists_every_option(site: Path) -> None:
    page = text_of(site / "reference" / "options.html")
    for flag in every_flag():
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", page), flag


def test_the_settings_page_lists_every_key_with_its_variable(site: Path) -> None:
    page = text_of(site / "reference" / "settings.html")
    for key in KEYS:
        assert re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", page), key
        assert "AGENT_LOOP_" + key.replace("-", "_").upper() in page, key


def test_the_exit_codes_page_lists_every_code_and_every_error(site: Path) -> None:
    page = text_of(site / "reference" / "exit-codes.html")
    for code in errors.EXIT_CODES:
        assert re.search(rf"^{code}$", page, re.M), code
    for cls in [errors.AgentLoopError, *reference()._subclasses(errors.AgentLoopError)]:
        assert cls.__name__ in page, cls


def test_the_events_page_lists_every_event_and_field(site: Path) -> None:
    from dataclasses import fields

    page = text_of(site / "reference" / "events.html")
    for name, cls in events.event_types().items():
        assert name in page
        for field in fields(cls):
            assert field.name in page, (name, field.name)


def test_every_exception_exits_with_a_code_the_table_explains() -> None:
    classes = [errors.AgentLoopError, *reference()._subclasses(errors.AgentLoopError)]
    assert {c.exit_code for c in classes} <= set(errors.EXIT_CODES)
    assert {0, 1, 2, errors.INTERNAL_EXIT, errors.UNFINISHED_EXIT, 130} == set(errors.EXIT_CODES)


def test_the_example_events_fit_the_published_schema() -> None:
    schema = reference().event_schema()
    validator = jsonschema.Draft202012Validator(schema)
    lines = (REPO / ".agent-loop.example" / "events.jsonl").read_text().splitlines()
    assert len(lines) > 10
    for line in lines:
        assert not list(validator.iter_errors(json.loads(line))), line
    # and it can fail: a field of the wrong type, a type that does not exist
    bad = json.loads(lines[0]) | {"pending": "two"}
    assert list(validator.iter_errors(bad))
    assert list(validator.iter_errors(json.loads(lines[0]) | {"type": "NoSuchEvent"}))


def test_the_readme_is_a_short_front_door_whose_links_lead_somewhere() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert local, "the README links into the docs"
    for link in local:
        assert (REPO / link).exists(), link
    # A new reader's questions, each a click from the README (the page then answers it).
    for page in ("docs/explanation/index.md", "docs/how-to/undo.md",
                 "docs/how-to/keep-a-budget.md", "docs/explanation/what-a-run-does.md"):
        assert page in local, page
    explanation = (DOCS / "explanation" / "index.md").read_text(encoding="utf-8")
    assert "git-only repository" in explanation and "Editing the plan" in explanation


def test_the_version_is_written_once_and_the_program_says_it() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    from importlib.metadata import version

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == \
        {"attr": "agentloop.__version__"}
    assert version("agent-loop") == __version__  # the installed metadata, read from there
    done = subprocess.run([sys.executable, "-m", "agentloop", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == f"agent-loop, version {__version__}"
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog


def test_every_settings_file_the_docs_name_is_one_agent_loop_reads() -> None:
    # Settings come from agent-loop.toml, pyproject.toml and ~/.config/agent-loop/config.toml
    # (agentloop/settings/sources.py); a file the docs place in the state folder is never read.
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", *DOCS.rglob("*.md")]
    for page in pages:
        named = re.findall(r"\.agent-loop/[\w./-]*\.toml", page.read_text(encoding="utf-8"))
        assert not named, (page.relative_to(REPO), named)


def test_every_file_a_run_leaves_in_the_state_folder_is_on_the_state_page(
        tmp_path: Path, fake_claude: object) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: write a.txt one\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    for args in (("--rehearse",), ("--vcs", "git", "--no-distill", "--lane-setup", "true")):
        done = agent_loop(work, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    page = (DOCS / "reference" / "state.md").read_text(encoding="utf-8")
    left = sorted(p.name for p in (work / ".agent-loop").iterdir())
    assert "logs" in left and "rehearsal" in left and "events.jsonl" in left
    assert [name for name in left if f"`{name}" not in page] == []


def test_a_key_that_is_not_its_options_long_name_is_said_so() -> None:
    # The settings page says a key is an option's long name; each exception must be named.
    source = (DOCS / "reference" / "settings.md").read_text(encoding="utf-8")
    for key in KEYS:
        if "--" + key not in every_flag():
            assert f"`{key}`" in source, key


def test_no_page_says_a_codex_run_is_not_counted_against_the_budget() -> None:
    # Codex reports tokens, and agent-loop prices them (agents.prices): its default models
    # have a price, so --budget counts Codex runs; only a model with no price reads
    # "cost unknown (tokens only)", and then --budget is refused before any run.
    from agentloop.agents.codex import MODELS
    from agentloop.agents.prices import rates_for

    assert rates_for(MODELS.task) is not None and rates_for(MODELS.helper) is not None
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert "`--budget` counts nothing" not in text, page.relative_to(REPO)


def test_where_a_check_runs_is_where_the_help_and_the_page_say(
        tmp_path: Path, fake_claude: object) -> None:
    # In a lane (the default), the baseline and every task's checks run in the lane, your last
    # commit: not in your checkout, whose uncommitted files they never see.
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: write a.txt one\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    where = tmp_path / "where.txt"
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--check", f"pwd >> {where}")
    assert done.returncode == 0, done.stdout + done.stderr
    ran_in = {Path(line) for line in where.read_text().splitlines()}
    assert len(ran_in) == 1 and work / ".agent-loop" / "lanes" in next(iter(ran_in)).parents
    check = next(p for p in command.params if p.name == "check")
    assert "repository root" not in (check.help or "")
    page = " ".join((DOCS / "how-to" / "write-checks.md").read_text(encoding="utf-8").split())
    assert "in the repository root" not in page and "on the tree as you left it" not in page
    beside = " ".join((DOCS / "how-to" / "work-beside-a-run.md").read_text().split())
    assert "run once in your checkout before the first task" not in beside


def test_a_run_of_one_group_is_said_to_work_in_a_lane(tmp_path: Path, fake_claude: Any) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: write a.txt one\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    cwd = Path(fake_claude.task_runs()[0]["cwd"])
    assert work / ".agent-loop" / "lanes" in cwd.parents
    page = " ".join((DOCS / "how-to" / "sandbox.md").read_text(encoding="utf-8").split())
    assert "the repository root in a run of one group" not in page


def test_a_report_left_in_the_tree_does_not_stop_a_run_in_a_lane(tmp_path: Path,
                                                                  fake_claude: Any) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: write a.txt one\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    written = agent_loop(work, "--report", "report.html")
    assert written.returncode == 0 and (work / "report.html").exists(), written.stderr
    with (work / "tasks.md").open("a") as tasks:
        tasks.write("- [ ] another task\n  FAKE: write b.txt two\n")
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0 and "2 completed" in done.stdout, done.stdout + done.stderr
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "would make the next run refuse it" not in readme


def test_a_task_out_of_attempts_runs_again_as_the_failures_page_says(
        tmp_path: Path, fake_claude: Any) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: fail 1\n  FAKE: write a.txt one\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    args = ("--vcs", "git", "--no-distill", "--max-attempts", "1")
    assert agent_loop(work, *args).returncode == 4
    assert "0 of 1 task(s) to run" in agent_loop(work, *args).stdout  # a plain run leaves it
    again = agent_loop(work, *args, "--task", "1", "--again")
    assert again.returncode == 0 and "1 completed" in again.stdout, again.stdout + again.stderr
    page = " ".join((DOCS / "reference" / "failures.md").read_text(encoding="utf-8").split())
    assert "is not run again until `--reset`" not in page and "--again" in page


def test_every_file_of_this_repository_the_docs_name_exists() -> None:
    # A path the reader is sent to (a script, a test, a module) that is no longer there.
    pattern = re.compile(r"(?<![\w/.-])((?:scripts|tests|agentloop|\.ci)/[\w/.-]*\w)")
    packages = "|".join(p.name for p in (REPO / "agentloop").iterdir() if p.is_dir()
                        and (p / "__init__.py").exists())
    inside = re.compile(rf"`((?:{packages})/[\w/]+\.py)`")
    for page in [REPO / "README.md", REPO / "CONTRIBUTING.md", *DOCS.rglob("*.md")]:
        for path in pattern.findall(page.read_text(encoding="utf-8")):
            assert (REPO / path).exists(), (page.relative_to(REPO), path)
        # A module named from inside the package (`vcs/history.py`).
        for path in inside.findall(page.read_text(encoding="utf-8")):
            assert (REPO / "agentloop" / path).exists(), (page.relative_to(REPO), path)


def test_the_json_help_names_every_mode_json_goes_with(tmp_path: Path) -> None:
    from tests.support.runner import agent_loop

    (tmp_path / "tasks.md").write_text("- [ ] a task\n")
    refused = agent_loop(tmp_path, "--json")
    assert refused.returncode == 2, refused.stderr
    modes = re.search(r"--json goes with (.*)$", refused.stderr, re.M)
    assert modes, refused.stderr
    json = next(p for p in command.params if p.name == "as_json")
    for mode in modes.group(1).split(" or "):
        assert mode in (json.help or ""), mode
    page = (DOCS / "reference" / "json-output.md").read_text(encoding="utf-8")
    assert "--integrate --json" in " ".join(page.split())


def test_a_plain_folder_becomes_the_repository_the_page_says(tmp_path: Path,
                                                              fake_claude: Any) -> None:
    import shutil

    from tests.support.runner import agent_loop

    if shutil.which("jj") is None:
        pytest.skip("jj is not on PATH")
    work = tmp_path / "plain"
    work.mkdir()
    (work / "tasks.md").write_text("- [ ] a task\n  FAKE: write a.txt one\n")
    env = {**os.environ, "JJ_USER": "T", "JJ_EMAIL": "t@example.com"}
    done = agent_loop(work, "--no-distill", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / ".jj").is_dir()  # jj installed: `jj git init`, not `git init`
    page = " ".join((DOCS / "explanation" / "version-control.md").read_text().split())
    assert "(a plain folder is `git init`ed)" not in page


def test_a_parallel_lane_is_named_as_the_parallel_page_says(tmp_path: Path,
                                                             fake_claude: Any) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = ("# Plan\n\n## Backend\n- [ ] one\n  FAKE: write a.txt one\n\n"
            "## Frontend\n- [ ] two\n  FAKE: write b.txt two\n")
    work = committed_plan(git_project(tmp_path, plan), plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    lanes = sorted(Path(c["cwd"]).name for c in fake_claude.task_runs())
    assert [re.sub(r"^tasks\.[0-9a-f]{6}-", "<plan>-", n) for n in lanes] == \
        ["<plan>-1-backend", "<plan>-2-frontend"], lanes
    page = (DOCS / "explanation" / "parallel-groups.md").read_text(encoding="utf-8")
    assert "`.agent-loop/lanes/<plan>-<n>-<group>/`" in page
    assert "--lane-copy" in page  # what git ignores comes in as asked, not never


def test_the_agents_reflog_mark_is_as_the_environment_page_shows(tmp_path: Path,
                                                                 fake_claude: Any) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: write a.txt one\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    mark = fake_claude.task_runs()[0]["env"]["GIT_REFLOG_ACTION"]
    shown = re.sub(r"^agent-loop agent [0-9a-f]{8} tasks\.[0-9a-f]{6}-",
                   "agent-loop agent 1a2b3c4d tasks.c63cd8-", mark)
    page = " ".join((DOCS / "reference" / "agent-environment.md").read_text().split())
    assert f"`GIT_REFLOG_ACTION={shown}`" in page, mark


def example_commands() -> list[tuple[str, list[str]]]:
    """The `agent-loop tasks.md …` lines of the docs' shell examples: (page, arguments), each
    with `K` as 2 and without its comment."""
    import shlex

    found = []
    for page in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        fence: str | None = None  # the info string of the block we are in
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fence = line[3:].strip() if fence is None else None
                continue
            command = re.search(r"(?:^|\$ |&& )agent-loop (tasks\.md .*)", line)
            if fence in ("", "sh", "console", "bash", "shell") and command:
                words = shlex.split(command.group(1).split(" | ")[0], comments=True)
                found.append((str(page.relative_to(REPO)),
                              ["2" if w == "K" else w for w in words]))
    return found


def test_the_docs_examples_are_taken_as_written(tmp_path: Path) -> None:
    # Each example, with --dry-run unless it rehearses (which costs nothing and runs no
    # agent), is no usage error in a repository with a plan of three groups.
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = ("# Plan\n\n## One\n- [ ] a\n- [ ] b\n\n## Two\n- [ ] c\n\n"
            "## Three\nDepends on: One, Two\n- [ ] d\n")
    work = committed_plan(git_project(tmp_path, plan), plan)
    modes = {"--status", "--serve", "--report", "--integrate", "--push", "--init", "--again",
             "--stop-after-running"}
    tried = 0
    for page, words in example_commands():
        if modes & set(words):
            continue
        args = words[1:] + ([] if "--rehearse" in words else ["--dry-run"])
        done = agent_loop(work, *args, timeout=120)
        assert done.returncode != 2, (page, words, done.stderr)
        tried += 1
    assert tried >= 10


def test_a_run_cut_short_by_its_cap_fails_its_task_as_the_costs_page_says(
        tmp_path: Path, fake_claude: Any) -> None:
    from tests.support.repos import committed_plan, git_project
    from tests.support.runner import agent_loop

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: over-budget\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--task-budget", "1")
    assert done.returncode == 4 and "1 failed" in done.stdout, done.stdout + done.stderr
    assert len(fake_claude.task_runs()) == 1  # no second attempt
    page = " ".join((DOCS / "how-to" / "costs.md").read_text(encoding="utf-8").split())
    assert "a run cut short by it is a failed attempt" not in page


def test_the_settings_pages_bad_setting_lines_are_what_agent_loop_says(tmp_path: Path) -> None:
    from tests.support.runner import agent_loop

    (tmp_path / "tasks.md").write_text("- [ ] a task\n")
    page = " ".join((DOCS / "reference" / "settings.md").read_text(encoding="utf-8").split())
    for toml, shown in (("bugdet = 9\n", "unknown setting 'bugdet'; did you mean 'budget'?"),
                        ("max-attempts = 9\n", "9 is not in the range 1<=x<=5")):
        (tmp_path / "agent-loop.toml").write_text(toml)
        done = agent_loop(tmp_path, "--show-settings")
        assert done.returncode == 2 and shown in done.stderr, done.stderr
        assert shown in page, shown


def test_the_branch_a_plain_run_works_on_is_the_one_the_readme_names(
        tmp_path: Path, fake_claude: Any) -> None:
    import subprocess
    import sys
    import time

    from tests.support.repos import committed_plan, git, git_project

    plan = "# Plan\n\n## One\n- [ ] a task\n  FAKE: write a.txt one\n  FAKE: pause 3\n"
    work = committed_plan(git_project(tmp_path, plan), plan)
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--no-distill"], cwd=work, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[str] = set()
    try:
        while run.poll() is None and not seen:
            seen = {b for b in git(work, "branch", "--format=%(refname:short)").split()
                    if b.startswith("agent-loop/")}
            time.sleep(0.05)
    finally:
        assert run.wait(timeout=120) == 0
    assert len(seen) == 1 and next(iter(seen)).endswith("-serial"), seen
    assert git(work, "branch", "--format=%(refname:short)").split() == ["main"]
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "A plain run makes no branch" not in readme and "-serial`" in readme
