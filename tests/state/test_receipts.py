"""Receipts, budgets and distilled commit messages (issue 9)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.run.distill import diff_stat, message, parse
from tests.support.claude_cli import real_project
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi, HttpError, Text
from tests.support.repos import tasks_of
from tests.support.runner import agent_loop, invoke

# List prices the CLI applies per million tokens (tests/claude-cli/NOTES.md).
PRICES = {"claude-opus-5-5": (4.0, 20.0), "claude-haiku-5-5": (0.10, 0.50)}


def billed(api: FakeApi) -> float:
    """What the CLI should report for every answered request the fake API served."""
    total = 0.0
    for request in api.billed:
        price_in, price_out = PRICES[request.model or ""]
        total += (api.input_tokens * price_in + api.output_tokens * price_out) / 1e6
    return total


# -- pure parts --------------------------------------------------------------------------------

def test_distilled_message_parts() -> None:
    assert parse('Sure!\n```json\n{"subject": "Add a greeting.", "body": "Prints hi."}\n```') == \
        ("Add a greeting", "Prints hi.")
    assert parse("no json here") is None and parse('{"body": "only"}') is None
    assert message("Docs", "Write the README", "Covers install.") == \
        "agent-loop: Docs / Write the README\n\nCovers install."
    long = message("G", "x" * 100, "")
    assert len(long.split(" / ", 1)[1]) == 72 and long.endswith("…")
    diff = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@\n-old\n+new\n+more\n"
            "diff --git a/b.txt b/b.txt\n+++ b/b.txt\n+x\n")
    assert diff_stat(diff) == "a.py | +2 -1\nb.txt | +1 -0"


# -- budget with the fake claude ---------------------------------------------------------------

def test_budget_stops_before_the_next_task_and_raising_it_continues(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n- two\n- three\n")
    code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "0.005")
    assert code == 1
    assert "budget reached before task 2: spent $0.0100 of $0.0050" in err
    assert err.strip().endswith("Continue with a higher budget: agent-loop tasks.md --vcs none "
                                "--budget 0.0150")
    state = orjson.loads((tmp_path / ".agent-loop" / "state.json").read_bytes())
    assert [t["status"] for t in state["tasks"]] == ["completed", "pending", "pending"]
    code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "0.015")
    assert code == 1 and "before task 3" in err
    code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "1")
    assert code == 0, err
    assert "3 completed" in out


def test_a_task_the_budget_holds_back_is_not_said_to_stall(tmp_path: Path,
                                                          fake_claude: FakeClaude,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Each run stopped by the budget before task 2 counted it as started: the third said
    # `task 2 has started in 3 runs in a row without completing (pending: no reason recorded);
    # read . and consider rewording or splitting it`, of a task no agent ever ran.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n- two\n")
    for _ in range(4):
        code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "0.005")
        assert code == 1 and "budget reached before task 2" in err, err
    assert "started in" not in out + err, out + err
    two = orjson.loads((tmp_path / ".agent-loop" / "state.json").read_bytes())["tasks"][1]
    assert two["status"] == "pending" and two["stalled_runs"] == 0 and not two["history"]


def test_a_task_cut_short_by_its_own_budget(tmp_path: Path, fake_claude: FakeClaude,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- big\n  FAKE: over-budget\n- small\n")
    code, out, err = invoke("tasks.md", "--vcs", "none", "--task-budget", "0.5")
    assert code == 4, err  # the big task failed
    big, small = orjson.loads((tmp_path / ".agent-loop" / "state.json").read_bytes())["tasks"]
    assert big["status"] == "failed" and big["attempts"] == 1
    assert big["error"] == "cut short by its own budget (--task-budget 0.5 USD)"
    assert big["history"][0]["outcome"] == "budget"
    runs = [c["argv"] for c in fake_claude.calls()]
    assert all(argv[argv.index("--max-budget-usd") + 1] == "0.5" for argv in runs)
    assert small["status"] == "completed"


def test_a_task_cut_short_by_a_cap_agent_loop_did_not_set(tmp_path: Path, fake_claude: FakeClaude,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # A `claude` wrapper of the user's (or AGENT_LOOP_CLAUDE) that adds --max-budget-usd: with
    # no --task-budget the run crashed formatting the missing flag's value (exit 3, the task
    # `interrupted` with a TypeError for its error).
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- big\n  FAKE: over-budget\n- small\n")
    code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "5")
    assert code == 4, err
    assert "internal error" not in err
    big, small = orjson.loads((tmp_path / ".agent-loop" / "state.json").read_bytes())["tasks"]
    assert big["status"] == "failed" and big["attempts"] == 1
    assert big["error"] == "cut short by its own budget: Reached maximum budget"
    assert small["status"] == "completed"


def test_status_shows_receipts_per_group_and_in_total(tmp_path: Path, fake_claude: FakeClaude,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("## A\n- one\n- two\n## B\n- three\n")
    code, out, _ = invoke("tasks.md", "--vcs", "none")
    assert "cost $0.0300; tokens in 300 out 60" in out
    result = CliRunner().invoke(command, ["tasks.md", "--status"])
    assert "  A: $0.0200 · tokens in 200 out 40 cache read 0 write 0 · 2 turns" in result.stdout
    assert "  total: $0.0300 · tokens in 300 out 60" in result.stdout
    data = orjson.loads(CliRunner().invoke(command, ["tasks.md", "--status", "--json"]).stdout)
    assert data["receipts"]["total"]["input_tokens"] == 300
    assert data["receipts"]["groups"]["B"]["cost_usd"] == pytest.approx(0.01)
    assert data["tasks"][0]["receipt"]["models"] == ["opus"]


# -- with the real CLI against the fake API ----------------------------------------------------

def test_state_costs_equal_what_the_cli_billed_with_advisor_and_distiller(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    # Task 1's first run fails in a way only the advisor can judge (a 400, which the CLI
    # re-sends six times); the advisor says retry; each completed task gets a distilled message.
    fake_api.script(*[HttpError(400, "invalid_request_error", "odd (fake)")] * 6, model="opus")
    fake_api.script(Text('{"retry": true, "reason": "fluke", "hint": "again"}'),
                    Text('{"subject": "Add the first file", "body": "one.txt holds one."}'),
                    Text('{"subject": "Add the second file", "body": "two.txt holds two."}'),
                    model="haiku")
    done = agent_loop(work, "--vcs", "git", env=env)
    assert done.returncode == 0, done.stderr
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    spent = sum(t["cost_usd"] for t in state["tasks"])
    assert spent == pytest.approx(billed(fake_api), abs=1e-9)
    helpers = sum(a["helper_cost_usd"] for t in state["tasks"] for a in t["history"])
    assert helpers == pytest.approx(3 * 0.00002, abs=1e-9)  # advisor + two distillers on haiku
    log = subprocess.run(["git", "log", "--format=%B%x00"], cwd=work, capture_output=True,
                         text=True, check=True).stdout
    assert "agent-loop: G / Add the second file\n\ntwo.txt holds two." in log
    assert "agent-loop: G / Add the first file\n\none.txt holds one." in log


def test_a_failing_distiller_keeps_the_plain_message(tmp_path: Path, fake_api: FakeApi,
                                                     claude_bin: Path, jj_bin: str) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    subprocess.run([jj_bin, "git", "init"], cwd=work, check=True, capture_output=True)
    (work / "tasks.md").write_text("## G\n- WRITE one.txt: one\n")
    fake_api.script(HttpError(500, "api_error", "down (fake)"), model="haiku")
    done = agent_loop(work, "--vcs", "jj", env=env)
    assert done.returncode == 0, done.stderr
    assert "kept the plain one (distiller failed" in done.stdout
    described = subprocess.run([jj_bin, "log", "--no-graph", "-r", "all()", "-T",
                                'description ++ "\\x00"'], cwd=work, capture_output=True,
                               text=True, check=True).stdout
    # The plain subject, then the task's trailers (which plan, which task).
    plain = [d for d in described.split("\x00") if d.startswith("agent-loop: G / WRITE one.txt")]
    assert plain and plain[0].splitlines()[0] == "agent-loop: G / WRITE one.txt: one", described
    assert "Agent-Loop-Task: 1 " in plain[0]


def test_task_budget_with_the_real_cli(tmp_path: Path, fake_api: FakeApi,
                                       claude_bin: Path) -> None:
    work, env = real_project(tmp_path, fake_api, claude_bin)
    done = agent_loop(work, "--vcs", "none", "--task-budget", "0.0001", env=env)
    assert done.returncode == 4, done.stderr
    first = tasks_of(work)[0]
    assert first["status"] == "failed" and "cut short by its own budget" in first["error"]


def test_runs_of_edited_removed_and_again_tasks_stay_in_the_receipts_and_the_budget(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 23 bug 3: a task reworded (or removed) after its run took that run's cost out of
    # --status and --budget, so a budget could overspend.
    monkeypatch.chdir(tmp_path)
    # Groups of their own: a session's running total does not hide what is lost.
    (tmp_path / "tasks.md").write_text("## A\n- one\n## B\n- two\n  FAKE: exit 1\n"
                                       "## C\n- three\n")
    # Task two fails: reworded, it runs again (a finished one would stay done).
    assert invoke("tasks.md", "--vcs", "none", "--max-attempts", "1")[0] == 4
    (tmp_path / "tasks.md").write_text("## A\n- one\n## B\n- two, better worded\n")
    code, out, err = invoke("tasks.md", "--vcs", "none")
    assert code == 0, err
    assert "1 edited, 1 removed" in out
    assert "cost $0.0400" in out  # the summary: 3 first runs and the reworded task's
    code, out, _ = invoke("tasks.md", "--vcs", "none", "--status")
    assert "cost $0.0400" in out
    assert "edited or removed tasks: $0.0200" in out
    data = orjson.loads(invoke("tasks.md", "--vcs", "none", "--status", "--json")[1])
    assert data["cost_usd"] == pytest.approx(0.04)
    assert invoke("tasks.md", "--vcs", "none", "--task", "1", "--again")[0] == 0
    data = orjson.loads(invoke("tasks.md", "--vcs", "none", "--status", "--json")[1])
    assert data["cost_usd"] == pytest.approx(0.05)
    (tmp_path / "tasks.md").write_text("## A\n- one\n## B\n- two, better worded\n- four\n")
    code, _, err = invoke("tasks.md", "--vcs", "none", "--budget", "0.05")
    assert code == 1 and "spent $0.0500 of $0.0500" in err


def test_checks_changed_in_the_settings_file_are_no_checks_dropped(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # The re-run said "the last run of this plan had --check true, which this run goes
    # without; to keep them: … --check true": the person had replaced that check on purpose.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("## A\n- one\n## B\n- two\n")
    (tmp_path / "agent-loop.toml").write_text('check = ["true"]\n')
    assert invoke("tasks.md", "--vcs", "none", "--task", "1")[0] == 0
    (tmp_path / "agent-loop.toml").write_text('check = ["test -d ."]\n')
    code, out, err = invoke("tasks.md", "--vcs", "none")
    assert code == 0, err
    assert "the last run of this plan had" not in out + err


def test_a_plain_rerun_keeps_the_budget_and_names_what_it_drops(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 23 bug 4: a plain re-run dropped the budget, review and checks without a word.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("## A\n- one\n## B\n- two\n## C\n- three\n")
    code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "0.015", "--check", "true",
                            "--model", "opus-x")
    assert code == 1 and "budget reached before task 3" in err
    code, out, _ = invoke("tasks.md", "--vcs", "none", "--status")
    assert "budget: $0.0150, the most this plan may cost since its last --reset; $0.0200 " \
        "spent" in out
    status = invoke("tasks.md", "--vcs", "none", "--status", "--json")[1]
    assert orjson.loads(status)["budget"] == 0.015
    code, out, err = invoke("tasks.md", "--vcs", "none")  # a plain re-run: still held to its budget
    assert code == 1 and "budget reached before task 3: spent $0.0200 of $0.0150" in err
    assert ("the last run of this plan had --check true --model opus-x, which this run goes "
            "without; to keep them: agent-loop tasks.md --vcs none --check true --model "
            "opus-x") in out
    # a new budget is the promise from now on
    code, out, err = invoke("tasks.md", "--vcs", "none", "--budget", "1")
    assert code == 0, err
    assert "the last run of this plan had" not in out  # the plain run before dropped them
    assert orjson.loads(invoke("tasks.md", "--vcs", "none", "--status", "--json")[1])["budget"] == 1
    assert invoke("tasks.md", "--vcs", "none", "--reset", "--yes")[0] == 0
    status = invoke("tasks.md", "--vcs", "none", "--status", "--json")[1]
    assert orjson.loads(status)["budget"] is None
