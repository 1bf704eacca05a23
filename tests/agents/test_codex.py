"""CodexAgent (agentloop/agents/codex.py) driving the real Codex CLI against the fake API."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from agentloop.agents import (
    BLOCKING,
    LIMIT,
    LOOP_RULES,
    OTHER,
    REVIEW_RULES,
    TRANSIENT,
    Activity,
    AgentResult,
    AgentRun,
    make_agent,
)
from agentloop.agents.codex import MODELS, CodexAgent
from agentloop.errors import Interrupted, ProgramNotFound
from tests.support.codex_cli import codex_env, require_codex, session_files
from tests.support.fake_openai import (
    FakeOpenAI,
    Hang,
    Message,
    Patch,
    Shell,
    add_file,
    developer_text,
    last_user_text,
    rate_limited,
    server_error,
    unauthorized,
    usage_limit,
)

# The fixtures, imported rather than registered as a plugin (conftest.py registers only
# tests.support.claude_cli).


@pytest.fixture
def setup(tmp_path: Path, fake_openai: FakeOpenAI) -> tuple[CodexAgent, Path, dict[str, str]]:
    """An agent on the pinned CLI, its environment, and an empty working copy."""
    codex = require_codex()
    env = codex_env(tmp_path / "home", fake_openai)
    work = tmp_path / "work"
    work.mkdir()
    return CodexAgent(str(codex), env), work, env


def request(work: Path, prompt: str, name: str = "run", **kw: Any) -> AgentRun:
    logs = work.parent / "logs"
    return AgentRun(prompt=prompt, model=kw.pop("model", "gpt-6.1-sol"), cwd=work,
                    log=logs / f"{name}.log", raw_log=logs / f"{name}.jsonl", **kw)


def run(agent: CodexAgent, req: AgentRun) -> tuple[AgentResult, list[str]]:
    seen: list[Activity] = []
    result = agent.run(req, seen.append)
    assert [a.tool_calls for a in seen] == sorted(a.tool_calls for a in seen)
    return result, [a.text for a in seen]


def test_a_plain_answer(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(Message("the answer\nProgress: done\nLearnings: none"))
    result, seen = run(agent, request(work, "What is it?\n-- a prompt line starting with a dash"))
    assert result.ok and result.exit_code == 0 and result.error is None
    assert result.text.startswith("the answer")
    assert result.session_id and len(result.session_id) == 36
    assert result.usage == {"input_tokens": 100, "cache_read_input_tokens": 0,
                            "cache_creation_input_tokens": 0, "output_tokens": 20}
    assert result.totals.usage == result.usage and result.num_turns == 1
    assert result.cost_known is False and result.cost_usd == 0.0
    assert result.duration_ms is not None and result.model == "gpt-6.1-sol"
    (req,) = fake_openai.responses_requests()
    assert last_user_text(req.body).rstrip() == "What is it?\n-- a prompt line starting with a dash"
    assert LOOP_RULES in developer_text(req.body)
    assert req.model == "gpt-6.1-sol" and not fake_openai.unexpected()
    log = (work.parent / "logs" / "run.log").read_text()
    assert "-- prompt --\nWhat is it?" in log and "the answer" in log and "== finished" in log
    raw = (work.parent / "logs" / "run.jsonl").read_text().splitlines()
    assert json.loads(raw[0])["type"] == "thread.started"
    assert json.loads(raw[-1])["type"] == "turn.completed"
    assert any("the answer" in line for line in seen)


def test_a_shell_command_writes_in_the_working_copy(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(Shell("printf 'made by codex' > made.txt && echo wrote"), Message("done"))
    result, seen = run(agent, request(work, "make a file"))
    assert result.ok, result.error
    assert (work / "made.txt").read_text() == "made by codex"
    assert result.num_turns == 2 and result.usage["input_tokens"] == 200
    assert "$ printf 'made by codex' > made.txt && echo wrote" in seen
    log = (work.parent / "logs" / "run.log").read_text()
    assert "→ $ printf 'made by codex' > made.txt" in log and "← exit 0: wrote" in log


def test_apply_patch_edits_the_working_copy(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    (work / "old.txt").write_text("one\ntwo\n")
    update = "*** Begin Patch\n*** Update File: old.txt\n@@\n one\n-two\n+TWO\n*** End Patch"
    fake_openai.script(Patch(add_file("src/new.py", "print('hi')")), Patch(update),
                       Message("patched"))
    result, seen = run(agent, request(work, "patch"))
    assert result.ok, result.error
    assert (work / "src" / "new.py").read_text() == "print('hi')\n"
    assert (work / "old.txt").read_text() == "one\nTWO\n"
    assert any(line.startswith("patch add ") and "new.py" in line for line in seen)
    assert any(line.startswith("patch update ") for line in seen)


def test_resume_continues_the_thread(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(Message("first answer"), Message("second answer"))
    first, _ = run(agent, request(work, "first prompt", "one"))
    second, _ = run(agent, request(work, "second prompt", "two", resume=first.session_id,
                                    before=first.totals))
    assert second.ok and second.session_id == first.session_id
    assert second.text == "second answer"
    # Codex's usage adds up over the thread: the run's own part, and the running total.
    assert second.usage["input_tokens"] == 100 and second.usage["output_tokens"] == 20
    assert second.totals.usage["input_tokens"] == 200
    body = fake_openai.responses_requests()[-1].body
    texts = json.dumps(body["input"])
    assert "first prompt" in texts and "first answer" in texts
    assert last_user_text(body).rstrip() == "second prompt"
    assert LOOP_RULES in developer_text(body)
    assert "resuming " + str(first.session_id) in (work.parent / "logs" / "two.log").read_text()


def test_resuming_an_unknown_thread_fails_as_other(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    result, _ = run(agent, request(work, "x", resume="01a206e5-f280-7a63-ac0f-3c85999126be"))
    assert not result.ok and result.exit_code == 1
    assert "no rollout found" in (result.error or "")
    assert agent.classify(result, datetime.now(timezone.utc)).kind == OTHER
    assert not fake_openai.responses_requests()


def test_a_500_is_transient(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(server_error())
    result, _ = run(agent, request(work, "x"))
    assert not result.ok and result.exit_code == 1
    assert "high demand" in (result.error or "")
    assert agent.classify(result, datetime.now(timezone.utc)).kind == TRANSIENT
    assert len(fake_openai.responses_requests()) == 1  # retries are off in the test config


def test_a_401_is_blocking(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(unauthorized())
    result, _ = run(agent, request(work, "x"))
    assert not result.ok and result.api_error_status == 401
    failure = agent.classify(result, datetime.now(timezone.utc))
    assert failure.kind == BLOCKING and "Incorrect API key" in failure.reason


def test_a_missing_key_is_blocking(setup: Any, fake_openai: FakeOpenAI) -> None:
    _, work, env = setup
    del env["OPENAI_API_KEY"]
    agent = CodexAgent(str(require_codex()), env)
    result, _ = run(agent, request(work, "x"))
    assert not result.ok and "OPENAI_API_KEY" in (result.error or "")
    assert agent.classify(result, datetime.now(timezone.utc)).kind == BLOCKING


def test_a_usage_limit_with_a_reset_time(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    resets = int(time.time()) + 3 * 3600
    fake_openai.script(usage_limit(resets))
    result, _ = run(agent, request(work, "x"))
    failure = agent.classify(result, datetime.now(timezone.utc))
    assert failure.kind == LIMIT and failure.resets_at is not None
    # Codex prints whole minutes, cut off.
    assert resets - 60 <= failure.resets_at <= resets
    assert result.limit_resets_at == failure.resets_at


def test_a_usage_limit_another_day(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    resets = int(time.time()) + 2 * 86400 + 600
    fake_openai.script(usage_limit(resets))
    result, _ = run(agent, request(work, "x"))
    assert "2026" in (result.error or "") or str(time.gmtime(resets).tm_year) in str(result.error)
    failure = agent.classify(result, datetime.now(timezone.utc))
    assert failure.kind == LIMIT and failure.resets_at is not None
    assert resets - 60 <= failure.resets_at <= resets


def test_a_usage_limit_without_a_reset_and_a_plain_429(setup: Any,
                                                        fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(usage_limit(None), rate_limited())
    now = datetime.now(timezone.utc)
    first, _ = run(agent, request(work, "x", "one"))
    second, _ = run(agent, request(work, "x", "two"))
    assert agent.classify(first, now) .kind == LIMIT
    assert agent.classify(first, now).resets_at is None
    assert second.api_error_status == 429
    assert agent.classify(second, now).kind == LIMIT


def test_the_reviewer_cannot_write(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, _ = setup
    fake_openai.script(Shell("echo no > shell.txt"), Patch(add_file("patch.txt", "no")),
                       Message("VERDICT: approve"))
    req = request(work, "review this", read_only=True, model=MODELS.review)
    result, _ = run(agent, req)
    assert result.ok, result.error
    assert list(work.iterdir()) == []
    outputs = json.dumps(fake_openai.responses_requests()[-1].body["input"])
    # Where a system bubblewrap older than Codex wants sits on PATH (Debian 12's 0.8, which
    # --sandbox installs), Codex prefers it and its sandbox cannot start any command at all:
    # the write fails either way.
    assert "Read-only file system" in outputs or "execvp codex-linux-sandbox" in outputs
    assert "patch rejected" in outputs
    assert REVIEW_RULES in developer_text(fake_openai.responses_requests()[0].body)
    assert LOOP_RULES not in developer_text(fake_openai.responses_requests()[0].body)
    with pytest.raises(ValueError):
        agent.argv(request(work, "x", read_only=True, resume=result.session_id))


def test_ask_answers_and_keeps_no_session(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, env = setup
    fake_openai.script(Message("retry: yes"), unauthorized())
    answer = agent.ask("should we retry?", MODELS.helper, work, timeout=60)
    assert answer.text == "retry: yes" and answer.error is None and answer.cost_usd == 0.0
    assert session_files(env) == []
    (req,) = fake_openai.responses_requests()
    assert req.model == "gpt-6-luna" and last_user_text(req.body).rstrip() == "should we retry?"
    assert '"sandbox_mode":"read-only"' in req.headers["x-codex-turn-metadata"]
    failed = agent.ask("again?", MODELS.helper, work, timeout=60)
    assert failed.error and "401" in failed.error
    missing = CodexAgent(str(work / "no-codex"), env).ask("x", "m", work)
    assert missing.error and "not found" in missing.error


def test_a_timeout_stops_codex_and_is_transient(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, env = setup
    fake_openai.script(Hang())
    result, _ = run(agent, request(work, "x", timeout=2))
    assert result.timed_out and not result.ok
    assert agent.classify(result, datetime.now(timezone.utc)).kind == TRANSIENT
    assert _codex_processes(env) == []


def test_ctrl_c_stops_the_whole_group(setup: Any, fake_openai: FakeOpenAI) -> None:
    agent, work, env = setup
    fake_openai.script(Hang())

    def interrupt() -> None:
        deadline = time.monotonic() + 30
        while not fake_openai.responses_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(Interrupted):
        run(agent, request(work, "x"))
    assert _codex_processes(env) == []
    assert "interrupted" in (work.parent / "logs" / "run.log").read_text()


def _codex_processes(env: dict[str, str]) -> list[int]:
    """Processes still running with this test's CODEX_HOME (the Node wrapper or the binary)."""
    mark = f"CODEX_HOME={env['CODEX_HOME']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_check_and_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ProgramNotFound, match="npm install -g @openai/codex"):
        CodexAgent(str(tmp_path / "nowhere"), {}).check()
    monkeypatch.setenv("AGENT_LOOP_CODEX", "/opt/my-codex")
    agent = make_agent("codex")
    assert isinstance(agent, CodexAgent) and agent.program == "/opt/my-codex"
    assert agent.name == "codex" and agent.models == MODELS
    assert CodexAgent("x", {"AGENT_LOOP_CODEX": "/y"}).program == "x"


def test_a_run_is_read_back_from_its_raw_log_only_when_its_turn_completed(
        tmp_path: Path) -> None:
    # What the run after a kill reads of a run nobody recorded the end of (agents.ReadsBack):
    # the events `codex exec --json` writes, as the test above reads them from the real CLI.
    agent, req = CodexAgent("codex", {}), request(tmp_path / "work", "")
    req.raw_log.parent.mkdir()
    events = [{"type": "thread.started", "thread_id": "t-1"},
              {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
              {"type": "turn.completed", "usage": {"input_tokens": 100, "output_tokens": 20}}]
    lines = [json.dumps(e) + "\n" for e in events]
    req.raw_log.write_text("".join(lines))
    result = agent.read_back(req)
    assert result is not None and result.ok and result.session_id == "t-1"
    assert result.text == "done" and result.usage["output_tokens"] == 20
    failed = {"type": "turn.failed", "error": {"message": "boom"}}
    for cut in (lines[:-1], [*lines[:-1], json.dumps(failed) + "\n"]):
        req.raw_log.write_text("".join(cut))
        assert agent.read_back(req) is None
