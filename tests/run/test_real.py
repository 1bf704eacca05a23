"""agent-loop end to end with the REAL Claude Code CLI against the fake Messages API.

These prove our flags and parsing: session sharing inside a group, a fresh session across groups,
and a clean interrupt and resume with real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.support.claude_cli import agent_loop_env
from tests.support.fakeapi import Directed, FakeApi, Hang, Text, last_user_text
from tests.support.runner import agent_loop

TASKS = """\
# Demo

## Backend
- WRITE api.txt: the api
- WRITE api-test.txt: the api test

## Docs
- WRITE readme.txt: the readme
- SAY all documented
"""


def state_of(work: Path) -> dict:
    return orjson.loads((work / ".agent-loop" / "state.json").read_bytes())


def prompts(api: FakeApi) -> list[str]:
    return [last_user_text(r.body) for r in api.requests_for_messages()]


def test_two_groups_share_sessions_inside_a_group_only(tmp_path: Path, fake_api: FakeApi,
                                                       claude_bin: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text(TASKS)
    done = agent_loop(work, "--vcs", "none", env=agent_loop_env(tmp_path, fake_api, claude_bin))
    assert done.returncode == 0, done.stderr
    state = state_of(work)
    tasks = state["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 4
    assert all(t["session_id"] for t in tasks)
    assert tasks[0]["session_id"] == tasks[1]["session_id"]
    assert tasks[2]["session_id"] == tasks[3]["session_id"]
    assert tasks[0]["session_id"] != tasks[2]["session_id"]
    assert (work / "api.txt").read_text() == "the api\n"
    assert (work / "readme.txt").read_text() == "the readme\n"

    requests = fake_api.requests_for_messages()
    by_prompt: dict[str, list] = {}
    for r in requests:
        by_prompt.setdefault(last_user_text(r.body).strip(), []).append(r)
    second = by_prompt["WRITE api-test.txt: the api test"][0]
    third = by_prompt["WRITE readme.txt: the readme"][0]
    assert "WRITE api.txt: the api" in orjson.dumps(second.body["messages"]).decode()
    assert "api.txt" not in orjson.dumps(third.body["messages"]).decode()
    # The loop's rules ride along in the system prompt, after Claude Code's own.
    assert "agent-loop" in orjson.dumps(requests[0].body["system"]).decode()

    log = (work / tasks[0]["log"]).read_text()
    assert "-- prompt --" in log and "\u2192 Write" in log and "success" in log
    assert "cost: $" in log and "tokens: input 200, output 40" in log
    # total_cost_usd adds up over a resumed session; each task is charged its own part:
    # two requests of 100 input and 20 output tokens on opus ($4 / $20 per million) = $0.0016.
    assert [t["cost_usd"] for t in tasks] == [0.0016, 0.0016, 0.0016, 0.0008]
    assert "[1/4] task 1: Backend > WRITE api.txt: the api" in done.stdout
    assert "4 completed" in done.stdout


def test_interrupt_then_resume_with_real_signals(tmp_path: Path, fake_api: FakeApi,
                                                 claude_bin: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text(TASKS)
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    # Task 1 writes a file (tool call + final text), then task 2's first request hangs.
    fake_api.script(Directed(), Directed(), Hang())
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none"],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(fake_api.requests_for_messages()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(fake_api.requests_for_messages()) == 3, "task 2 never reached the API"
    tool.send_signal(signal.SIGINT)
    out, err = tool.communicate(timeout=60)
    assert tool.returncode == 130, err
    assert "Resume with: agent-loop tasks.md --vcs none" in err
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed", "interrupted", "pending",
                                                     "pending"]
    assert (work / state["tasks"][1]["log"]).read_text().count("interrupted") >= 1

    again = agent_loop(work, "--vcs", "none", env=env)
    assert again.returncode == 0, again.stderr
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed"] * 4
    # The interrupted attempt is in the history but does not count against the task's cap.
    assert state["tasks"][1]["attempts"] == 1
    assert [a["outcome"] for a in state["tasks"][1]["history"]] == ["interrupted", "completed"]
    asked = prompts(fake_api)
    # Task 1 ran once (one tool turn + one final turn), never again.
    assert sum(p.strip() == "WRITE api.txt: the api" for p in asked) == 2
    # The re-run of task 2 resumed task 1's session: its request carries task 1's exchange.
    rerun = [r for r in fake_api.requests_for_messages()[3:]
             if "api-test.txt" in last_user_text(r.body)][0]
    assert "WRITE api.txt: the api" in orjson.dumps(rerun.body["messages"]).decode()
    assert state["tasks"][1]["session_id"] == state["tasks"][0]["session_id"]
    # No agent process outlived the interrupted run.
    assert not any(str(claude_bin) in p for p in _processes())


def _processes() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
            except OSError:
                pass
    return out


def test_a_prompt_over_the_argv_limit_reaches_the_real_cli_whole(tmp_path: Path, fake_api: FakeApi,
                                                                 claude_bin: Path) -> None:
    # Iterations carry the Progress section into the next prompt; over 128 KiB it could not be
    # one argument. On stdin it reaches the API byte for byte, and the task completes.
    work = tmp_path / "work"
    work.mkdir()
    progress = "Progress: " + "p" * (200 * 1024)
    (work / "tasks.md").write_text("- SAY a long one\n")
    fake_api.script(Text(f"half way\n{progress}\nLearnings: none"), Text("done\nTASK_COMPLETE"))
    done = agent_loop(work, "--vcs", "none", "--iterations", "2", "--no-distill",
                      env=agent_loop_env(tmp_path, fake_api, claude_bin))
    assert done.returncode == 0, done.stdout + done.stderr
    second = prompts(fake_api)[1]
    assert "p" * (200 * 1024) in second and len(second.encode()) > 128 * 1024
    assert state_of(work)["tasks"][0]["status"] == "completed"
