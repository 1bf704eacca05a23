"""agents/claude.py: argv, reading the real CLI's recorded output, and judging runs."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from agentloop.agents import Activity, AgentRun
from agentloop.agents.claude import ClaudeAgent
from agentloop.agents.claude_stream import StreamLog, judge
from agentloop.agents.common import LogFiles
from agentloop.errors import AgentBlocked, ProgramNotFound
from tests.support.fake_agent import FakeClaude

SAMPLES = Path(__file__).resolve().parents[1] / "claude-cli" / "samples"


def feed(lines: list[bytes]) -> tuple[StreamLog, str]:
    readable, raw = io.StringIO(), io.BytesIO()
    activity: list[Activity] = []
    log = StreamLog(LogFiles.held(readable, raw), activity.append)
    for line in lines:
        log.feed(line)
    assert raw.getvalue().count(b"\n") == len(lines)
    return log, readable.getvalue()


def test_activity_counts_turns_by_message_and_keeps_the_last_tool_call() -> None:
    def assistant(ident: str, block: dict) -> bytes:
        return json.dumps({"type": "assistant", "message": {"id": ident, "content": [block]}}
                          ).encode() + b"\n"
    seen: list[Activity] = []
    log = StreamLog(LogFiles.held(io.StringIO(), io.BytesIO()), seen.append)
    # the CLI sends each content block of one message as an event of its own, with its id
    log.feed(assistant("m1", {"type": "text", "text": "Let me look."}))
    log.feed(assistant("m1", {"type": "tool_use", "name": "Read", "input": {"file_path": "a"}}))
    log.feed(assistant("m2", {"type": "text", "text": "Now I edit it."}))
    assert [(a.text, a.tool, a.tool_calls, a.turns) for a in seen] == [
        ("Let me look.", "", 0, 1), ("Read a", "Read a", 1, 1),
        ("Now I edit it.", "Read a", 1, 2)]


def sample(name: str) -> list[bytes]:
    path = SAMPLES / name
    if not path.exists():
        pytest.fail(f"missing recorded sample {path} (tests/claude-cli/samples/README.md says "
                    "where they come from)")
    return path.read_bytes().splitlines(keepends=True)


def test_recorded_stream_gives_session_and_result() -> None:
    log, text = feed(sample("4c-stream.jsonl"))
    result = judge(0, False, log, "")
    assert result.ok and result.error is None
    assert result.session_id == "0ca626a3-5835-4434-aa6a-b8491052c05d"
    assert result.text == "Hello from the fake API!"
    assert result.cost_usd == pytest.approx(0.010992)
    assert result.usage == {"input_tokens": 2683, "output_tokens": 13,
                            "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    assert "Hello from the fake API!" in text and "session 0ca626a3" in text


def test_recorded_usage_limit_is_a_failure_with_its_text() -> None:
    log, text = feed(sample("ratelimit-5h-oauth-stream.jsonl"))
    result = judge(1, False, log, "")
    assert not result.ok
    assert result.error is not None and "5-hour limit" in result.error
    assert result.api_error_status == 429
    assert log.rate_limit is not None and log.rate_limit["resetsAt"] == 1795315786
    assert "rate limit: rejected (five_hour)" in text


@pytest.mark.parametrize("name", ["4d-overloaded-maxretries0.json", "error-401-apikey.json",
                                  "error-400-apikey.json", "4d-ratelimit-maxretries0.json"])
def test_recorded_api_errors_are_failures(name: str) -> None:
    log, _ = feed(sample(name))
    result = judge(1, False, log, "")
    assert not result.ok and result.error


def test_is_error_with_exit_zero_still_fails() -> None:
    line = b'{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 x"}\n'
    log, _ = feed([line])
    assert judge(0, False, log, "").error == "API Error: 500 x"


def test_garbage_and_missing_result() -> None:
    log, text = feed([b"hello\n", b"{\"half\": \n"])
    result = judge(0, False, log, "")
    assert not result.ok and "no result line" in (result.error or "")
    assert "[not JSON] hello" in text
    log, _ = feed([])
    assert "boom" in (judge(1, False, log, "boom\n").error or "")


def test_tool_calls_render_one_line_each() -> None:
    log, text = feed([
        b'{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write",'
        b'"input":{"file_path":"/w/a.py","content":"x"}}]}}\n',
        b'{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}\n'])
    assert "\u2192 Write /w/a.py" in text and "\u2190 ok" in text


def request(tmp_path: Path, prompt: str, resume: str | None = None) -> AgentRun:
    return AgentRun(prompt=prompt, model="opus", cwd=tmp_path, log=tmp_path / "l" / "a.log",
                    raw_log=tmp_path / "l" / "a.jsonl", resume=resume)


def test_a_run_is_read_back_from_its_raw_log_only_when_it_ended_well(tmp_path: Path) -> None:
    # What the run after a kill reads of a run nobody recorded the end of (agents.ReadsBack).
    agent, req = ClaudeAgent("claude"), request(tmp_path, "")
    req.raw_log.parent.mkdir()
    assert agent.read_back(req) is None  # no raw log at all
    whole = sample("4c-stream.jsonl")
    req.raw_log.write_bytes(b"".join(whole))
    result = agent.read_back(req)
    assert result is not None and result.ok and result.exit_code == 0
    assert result.session_id == "0ca626a3-5835-4434-aa6a-b8491052c05d"
    assert result.cost_usd == pytest.approx(0.010992) and result.num_turns is not None
    for cut in (whole[:-1], sample("ratelimit-5h-oauth-stream.jsonl")):  # no result; a failure
        req.raw_log.write_bytes(b"".join(cut))
        assert agent.read_back(req) is None


def test_the_prompt_is_never_in_argv(tmp_path: Path) -> None:
    prompt = "-rf $(x) `y` \"z\"\nnext"
    argv = ClaudeAgent("claude").argv(request(tmp_path, prompt, "s1"))
    assert not any(prompt in a or "-rf" in a for a in argv) and "--" not in argv
    assert argv[argv.index("--resume") + 1] == "s1"
    assert "--append-system-prompt" in argv and "--system-prompt" not in argv


def test_a_prompt_of_any_size_reaches_the_agent_byte_for_byte(fake_claude: FakeClaude,
                                                               tmp_path: Path) -> None:
    prompt = "x" * (200 * 1024) + "\n\u00e9 -- $(rm -rf /) `y`\nFAKE: write a.txt ok"
    result = ClaudeAgent().run(request(tmp_path, prompt), lambda text: None)
    assert result.ok, result.error
    assert fake_claude.prompts() == [prompt]


def test_run_with_fake_writes_logs(fake_claude: FakeClaude, tmp_path: Path) -> None:
    req = request(tmp_path, "FAKE: write a.txt hi")
    seen: list[Activity] = []
    result = ClaudeAgent().run(req, seen.append)
    assert result.ok and result.session_id
    text = req.log.read_text()
    assert "-- prompt --" in text and "== finished at" in text and "success" in text
    assert "\u2192 Write" in text and any(a.tool.startswith("Write ") for a in seen)
    assert req.raw_log.read_text().count("\n") >= 3


def test_root_refusal_is_blocking(fake_claude: FakeClaude, tmp_path: Path) -> None:
    with pytest.raises(AgentBlocked, match="IS_SANDBOX=1"):
        ClaudeAgent().run(request(tmp_path, "FAKE: root"), lambda _: None)


def test_missing_claude_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ProgramNotFound, match="claude not found"):
        ClaudeAgent(str(tmp_path / "nope")).check()


def test_timeout_stops_the_whole_group(fake_claude: FakeClaude, tmp_path: Path) -> None:
    req = AgentRun(prompt="FAKE: hang", model="opus", cwd=tmp_path, log=tmp_path / "a.log",
                   raw_log=tmp_path / "a.jsonl", timeout=1)
    result = ClaudeAgent().run(req, lambda _: None)
    assert result.timed_out and result.error == "timed out"
    # The hanging child the fake started must be gone too.
    out = os.popen("pgrep -f 'time.sleep(3600)'").read().split()
    assert out == []


def test_agent_dies_when_agent_loop_is_killed(fake_claude: FakeClaude, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "tasks.md").write_text("- FAKE: sleep 60\n")
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not fake_claude.calls() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_claude.calls(), "the agent never started"
    tool.send_signal(signal.SIGKILL)
    tool.wait()
    def running() -> bool:
        return any(str(fake_claude.bin) in line
                   for line in os.popen("ps -eo args").read().splitlines())

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and running():
        time.sleep(0.1)
    assert not running()


def test_logs_made_while_the_agent_deletes_their_folder_keep_their_header(
        fake_claude: FakeClaude, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The logs are made just after the agent starts; an agent whose first act is
    # `rm -rf .agent-loop` can take the folder between mkdir and open (measured: 7 runs in
    # 300). Here it is gone at the first try, every time.
    from agentloop.agents import common

    made = common._make
    tries: list[Path] = []

    def vanishing(log: Path, raw_log: Path) -> tuple:
        tries.append(log)
        if len(tries) == 1:
            raise FileNotFoundError(2, "No such file or directory", str(log.parent))
        return made(log, raw_log)

    monkeypatch.setattr(common, "_make", vanishing)
    req = request(tmp_path, "FAKE: write a.txt hi")
    assert ClaudeAgent().run(req, lambda text: None).ok
    assert len(tries) == 2
    text = req.log.read_text()
    assert text.startswith("== agent-loop") and "== finished at" in text
