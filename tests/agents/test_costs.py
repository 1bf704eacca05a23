"""Costs for every agent: Codex reports tokens, never dollars; agent-loop prices them from its
table of known models (agents/prices.py) or the user's `--price`, and refuses a budget it could
not keep before any agent runs. With the REAL Codex CLI against the fake Responses API."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.agents.prices import KNOWN, Rates, parse_rates, rates_for
from agentloop.state.receipts import money
from tests.support.codex_cli import codex_project
from tests.support.fake_openai import FakeOpenAI
from tests.support.repos import tasks_of
from tests.support.runner import agent_loop

# Per request 1000 input tokens (400 of them from the cache) and 100 out; a WRITE task is two
# requests (the patch, then the message).
PER_TASK = {"input_tokens": 1200, "cache_read_input_tokens": 800, "output_tokens": 200}


@pytest.fixture
def api() -> FakeOpenAI:
    with FakeOpenAI(input_tokens=1000, output_tokens=100, cached_tokens=400) as server:
        yield server


def test_codex_runs_are_priced_from_the_table_and_the_budget_holds(tmp_path: Path,
                                                                   api: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, api)
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", "--budget",
                      "0.005", env=env)
    tasks = tasks_of(work)
    first = tasks[0]["history"][0]
    # gpt-6.1-sol: $2 in, $0.10 cached, $10 out per million: 0.0024 + 0.00008 + 0.002.
    assert first["cost_known"] is True and first["cost_usd"] == pytest.approx(0.00448)
    assert "$0.0045" in done.stdout and "unknown" not in done.stdout
    # 0.00448 spent, under 0.005: task 2 runs; 0.00896 is over: task 3 never starts.
    assert [t["status"] for t in tasks] == ["completed", "completed", "pending"], done.stdout
    assert done.returncode != 0 and "budget reached before task 3" in done.stderr


def test_a_budget_for_a_model_without_a_price_is_refused_before_any_request(
        tmp_path: Path, api: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, api)
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", "--model",
                      "house-model", "--budget", "0.01", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--price house-model=IN/CACHED/OUT" in lines[0], done.stderr
    assert "run without --budget" in lines[0]
    assert api.responses_requests() == []
    assert not (work / ".agent-loop" / "state.json").exists() or \
        all(t["status"] == "pending" for t in tasks_of(work))


def test_the_users_price_prices_a_model_the_table_does_not_know(tmp_path: Path,
                                                                api: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, api, tasks="- WRITE a.txt: a\n")
    (work / "agent-loop.toml").write_text('prices = { "house-model" = "1/0.5/4" }\n')
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", "--model",
                      "house-model", "--budget", "1", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    first = tasks_of(work)[0]["history"][0]
    assert first["cost_usd"] == pytest.approx((1200 * 1 + 800 * 0.5 + 200 * 4) / 1e6)


def test_an_unpriced_run_without_a_budget_says_unknown_once(tmp_path: Path,
                                                             api: FakeOpenAI) -> None:
    work, env = codex_project(tmp_path, api, tasks="- WRITE a.txt: a\n")
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", "--model",
                      "house-model", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cost unknown (tokens only)" in done.stdout and "cost cost" not in done.stdout
    assert tasks_of(work)[0]["history"][0]["cost_known"] is False


def test_rates() -> None:
    assert rates_for("gpt-6-sol-2026-09-22") == KNOWN["gpt-6-sol"]  # a dated snapshot
    assert rates_for("gpt-6-sol-mini") is None
    assert rates_for("gpt-6-sol", [("gpt-6-sol", "3/3")]) == Rates(3, 3, 3)  # the user's first
    assert parse_rates("2/0.1/10") == Rates(2, 0.1, 10)
    for bad in ("2", "a/b/c", "-1/0/0", "1/2/3/4"):
        with pytest.raises(ValueError):
            parse_rates(bad)
    assert money(0.0, known=False) == "unknown (tokens only)"


def test_dry_run_refuses_the_same_budget(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "tasks.md").write_text("- WRITE a.txt: a\n")
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--agent", "codex",
                           "--vcs", "none", "--model", "house-model", "--budget", "1",
                           "--dry-run"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "--price house-model=IN/CACHED/OUT" in done.stderr
