"""retry.py: reading the advisor's answer, the cap, the fallback rule, and the call itself."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentloop import proc
from agentloop.agents.claude import ClaudeAgent
from agentloop.errors import Interrupted
from agentloop.run.retry import MAX_ATTEMPTS, Advice, advise, build_prompt, fallback, parse_advice
from tests.support.claude_cli import claude_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi, Text, last_user_text

ADVISOR_ARGV = ["-p", "--output-format", "json", "--model", "haiku", "--tools", "",
                "--no-session-persistence"]


# -- parse_advice ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ('{"retry": true, "reason": "flaky", "hint": "run it again"}', (True, "flaky", "run it again")),
    ('```json\n{"retry": false, "reason": "needs a key", "hint": ""}\n```',
     (False, "needs a key", "")),
    ('Sure. Here is my answer:\n{"retry": true, "reason": "r", "hint": "h"}\nGood luck!',
     (True, "r", "h")),
    ('{"retry": true}', (True, "", "")),
    ('{"retry": "false", "reason": "no"}', (False, "no", "")),
    ('{"retry": " True ", "hint": "h"}', (True, "", "h")),
    # the first object without a boolean retry is skipped, nested objects are found
    ('{"note": "x"} then {"retry": false, "reason": "second"}', (False, "second", "")),
    ('{"answer": {"retry": true, "reason": "inner"}}', (True, "inner", "")),
    ('[{"retry": true, "reason": "in a list"}]', (True, "in a list", "")),
    # braces inside strings and before the JSON do not confuse it
    ('I {think} so: {"retry": true, "reason": "use {x} and }", "hint": "{y}"}',
     (True, "use {x} and }", "{y}")),
    ('{"retry": false, "reason": 42, "hint": null}', (False, "42", "")),
    ('{"retry": true, "reason": "  padded  ", "hint": "  h "}', (True, "padded", "h")),
])
def test_parse_advice(text: str, expected: tuple[bool, str, str]) -> None:
    assert parse_advice(text) == expected


@pytest.mark.parametrize("text", [
    "", "retry: yes", "I think you should retry.", '{"retry": 1}', '{"retry": "yes"}',
    '{"retry": null}', '{"reason": "no retry key"}', '{"retry": true', "```json\n```",
    '["retry", true]',
])
def test_parse_advice_refuses(text: str) -> None:
    assert parse_advice(text) is None


# -- the prompt and the fallback rule -------------------------------------------------------------

def test_prompt_carries_task_attempt_error_and_a_bounded_log_tail() -> None:
    log = "old line\n" * 2000 + "the last line"
    prompt = build_prompt("Add a --verbose flag\nFAKE: write a.txt x", 2, 5, "API Error: 400 bad",
                          1, log, previous_error="exit 3: nope")
    assert "Add a --verbose flag\nFAKE: write a.txt x" in prompt
    assert "Attempt 2 of at most 5 just failed." in prompt
    assert "Exit code: 1" in prompt and "Error: API Error: 400 bad" in prompt
    assert "The previous attempt failed with: exit 3: nope" in prompt
    assert "the last line" in prompt and len(prompt) < 4000 + 3000
    assert prompt.count("old line") < 4000 // len("old line\n") + 1
    assert '{"retry": true or false, "reason": "...", "hint": "..."}' in prompt
    assert "ONLY a JSON object" in prompt


def test_prompt_stays_under_the_argv_limit() -> None:
    huge = "ü" * 500_000
    prompt = build_prompt(huge, 1, 5, huge, 1, huge, previous_error=huge)
    assert len(prompt.encode()) < 128 * 1024


def test_fallback_retries_while_attempts_remain_unless_the_error_repeats() -> None:
    assert fallback("x", 1, 5, "boom") == Advice(
        True, "no usable advice; retrying while attempts remain", "", "fallback: x")
    assert fallback("x", 2, 5, "boom", previous_error="other").retry is True
    same = fallback("x", 2, 5, "Exit 1:  Boom ", previous_error="exit 1: boom")
    assert same.retry is False and "same way twice" in same.reason and same.hint == ""
    capped = fallback("x", 5, 5, "boom")
    assert capped.retry is False and "attempt cap reached" in capped.reason
    assert fallback("x", 5, 50, "boom").retry is False      # the hard cap, whatever is asked


# -- advise with the fake claude ------------------------------------------------------------------

def ask(tmp_path: Path, task: str = "Add a feature", attempt: int = 1, max_attempts: int = 5,
        program: str = "claude", **kw: Any) -> Advice:
    args: dict[str, Any] = dict(agent=ClaudeAgent(program), model="haiku", task=task,
                                attempt=attempt, max_attempts=max_attempts,
                                error="API Error: 400 bad request",
                                exit_code=1, log_tail="...\n-- agent --\nsomething went wrong",
                                cwd=tmp_path)
    args.update(kw)
    return advise(**args)


def test_advise_asks_a_fresh_toolless_call(fake_claude: FakeClaude, tmp_path: Path) -> None:
    advice = ask(tmp_path)
    assert advice == Advice(True, "looks transient", "try again", "advisor", 0.001)
    (call,) = fake_claude.calls()
    assert call["argv"] == ADVISOR_ARGV
    assert "Add a feature" in call["stdin"] and call["cwd"] == str(tmp_path)


def test_advise_follows_the_answer(fake_claude: FakeClaude, tmp_path: Path) -> None:
    no = ask(tmp_path, 'Deploy it\nFAKE: advise {"retry": false, "reason": "needs credentials", '
                       '"hint": ""}')
    assert (no.retry, no.reason, no.hint, no.source) == (False, "needs credentials", "", "advisor")
    fenced = ask(tmp_path, 'Fix it\nFAKE: advise ```json {"retry": true, "reason": "typo", '
                           '"hint": "Check the import."} ```')
    assert (fenced.retry, fenced.hint) == (True, "Check the import.")


def test_advise_does_not_run_the_tasks_directives(fake_claude: FakeClaude, tmp_path: Path) -> None:
    start = time.monotonic()
    advice = ask(tmp_path, "Work\nFAKE: write a.txt x\nFAKE: sleep 30\nFAKE: fail 9")
    assert advice.source == "advisor" and not (tmp_path / "a.txt").exists()
    assert time.monotonic() - start < 10


def test_unparseable_answer_falls_back(fake_claude: FakeClaude, tmp_path: Path) -> None:
    advice = ask(tmp_path, "Work\nFAKE: advise I would retry this one.")
    assert advice.retry is True and advice.hint == ""
    assert advice.source.startswith("fallback: ") and "boolean" in advice.source
    assert advice.cost_usd == 0.001                 # the call happened, and cost money
    again = ask(tmp_path, "Work\nFAKE: advise garbage", attempt=2,
                previous_error="API Error: 400 bad request")
    assert again.retry is False and "same way twice" in again.reason


def test_failing_advisor_falls_back(fake_claude: FakeClaude, tmp_path: Path) -> None:
    advice = ask(tmp_path, "Work\nFAKE: advise-fail")
    assert advice.retry is True and advice.source.startswith("fallback: exit 1")
    assert "simulated advisor failure" in advice.source


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "advisor.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_missing_slow_or_silent_advisor_falls_back(tmp_path: Path) -> None:
    missing = ask(tmp_path, program=str(tmp_path / "nope"))
    assert missing.retry is True and "not found" in missing.source
    start = time.monotonic()
    slow = ask(tmp_path, program=script(tmp_path, "exec sleep 30"), timeout=0.5)
    assert slow.retry is True and "timed out" in slow.source
    assert time.monotonic() - start < 10
    unrunnable = tmp_path / "not-executable"
    unrunnable.write_text("#!/bin/sh\n")
    cannot = ask(tmp_path, program=str(unrunnable))
    assert cannot.retry is True and "not-executable" in cannot.source and len(cannot.source) < 400
    silent = ask(tmp_path, program=script(tmp_path, "echo not json; echo oops >&2"))
    assert silent.retry is True and "no JSON result (exit 0): oops" in silent.source
    other = ask(tmp_path, program=script(tmp_path, "echo '[1, 2]'"), attempt=3,
                previous_error="api error: 400  BAD request")
    assert other.retry is False and other.source.startswith("fallback: no JSON result")


def test_the_cap_stops_without_asking(fake_claude: FakeClaude, tmp_path: Path) -> None:
    for attempt, max_attempts in [(5, 5), (2, 2), (MAX_ATTEMPTS, 9), (7, 9)]:
        advice = ask(tmp_path, attempt=attempt, max_attempts=max_attempts)
        assert advice.retry is False and advice.reason.startswith("attempt cap reached")
        assert advice.source == "cap" and advice.cost_usd == 0
    assert fake_claude.calls() == []
    assert ask(tmp_path, attempt=4, max_attempts=9).retry is True
    assert "Attempt 4 of at most 5" in fake_claude.prompts()[0]


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), Interrupted("interrupted")])
def test_interrupts_go_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               exc: BaseException) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise exc
    monkeypatch.setattr(proc, "run", interrupted)
    with pytest.raises(type(exc)):
        ask(tmp_path)


# -- advise with the real CLI against the fake API ------------------------------------------------

def test_real_cli_advisor_call(claude_bin: Path, fake_api: FakeApi, tmp_path: Path) -> None:
    fake_api.script(Text('{"retry": false, "reason": "r", "hint": "h"}'), model="haiku")
    work = tmp_path / "work"
    work.mkdir()
    agent = ClaudeAgent(str(claude_bin), claude_env(tmp_path / "home", fake_api))
    advice = advise(agent, "haiku", "Add a --verbose flag", attempt=1, max_attempts=5,
                    error="API Error: 400 bad", exit_code=1, log_tail="the log", cwd=work,
                    timeout=60)
    assert (advice.retry, advice.reason, advice.hint, advice.source) == (False, "r", "h", "advisor")
    assert advice.cost_usd > 0
    (request,) = fake_api.requests_for_messages()
    assert request.model == "claude-haiku-5-5"
    assert request.body.get("tools", []) == []
    assert "Add a --verbose flag" in last_user_text(request.body)
    assert "Attempt 1 of at most 5 just failed." in last_user_text(request.body)
    assert fake_api.pending == [] and fake_api.unexpected() == []
    # --no-session-persistence: no transcript was written under the throwaway HOME.
    assert not list((tmp_path / "home").rglob("*.jsonl"))


def test_odd_bytes_in_what_the_advisor_reads_never_crash(fake_claude: FakeClaude,
                                                         tmp_path: Path) -> None:
    advice = ask(tmp_path, task="Fix\x00it \udcff", error="boom\x00\x1b[31m",
                 log_tail="tail\x00\udcfe" + "x" * 100_000)
    assert advice.source == "advisor"
    (call,) = fake_claude.calls()
    assert "\x00" not in call["stdin"] and "Fix\ufffdit" in call["stdin"]
