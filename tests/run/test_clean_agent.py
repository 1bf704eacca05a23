"""An agent that runs `git clean -fdx` in your checkout (`--workplace checkout`) deletes
`.agent-loop/` under a live run: the run lock (in `.git/`) still keeps a second run out, and the
first run's state comes back. In a lane of its own (the default) it cleans only its lane."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.support.claude_cli import claude_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi, Text, ToolUse
from tests.support.repos import init_repo


def start(work: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                             "--no-distill", "--workplace", "checkout"], cwd=work,
                            env={**env, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def second_run_is_refused_while_the_first_lives(work: Path, env: dict[str, str],
                                                first: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 20
    while not (work / ".agent-loop" / "state.json").exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the first run is under way
    while (work / ".agent-loop").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # wait for the agent's clean
    assert not (work / ".agent-loop").exists(), "the agent never cleaned"
    second = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git"],
                            cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1 and "another agent-loop run holds" in second.stderr, (
        second.stdout + second.stderr + "\nFIRST:\n" + "".join(first.communicate()))
    assert f"pid {first.pid}" in second.stderr
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    tasks = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    # What the run was writing while the agent cleaned comes back whole: the cleaning task's
    # log, and every event, the ones from before the clean included.
    log = work / tasks[1]["history"][0]["log"]
    assert "-- prompt --" in log.read_text() and "== finished at" in log.read_text()
    raw = [orjson.loads(line) for line in log.with_suffix(".jsonl").read_bytes().splitlines()]
    assert raw[0]["type"] == "system" and raw[-1]["type"] == "result"
    events = [orjson.loads(line)["type"]
              for line in (work / ".agent-loop" / "events.jsonl").read_bytes().splitlines()]
    assert events[0] == "RunStarted" and events[-1] == "RunFinished"
    assert events.count("TaskFinished") == 2


def test_git_clean_by_the_fake_agent(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hi\n")
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash git clean -qfdx -e tasks.md; sleep 2\n"
                                   "  FAKE: write b.txt B\n")
    first = start(work, dict(os.environ))
    second_run_is_refused_while_the_first_lives(work, dict(os.environ), first)


def test_git_clean_by_the_agent_in_its_lane_leaves_the_run_whole(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hi\n")
    init_repo(work, "git")
    (work / "notes.txt").write_text("yours, ignored by nobody\n")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash git clean -qfdx\n  FAKE: write b.txt B\n")
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill", "--allow-dirty"], cwd=work, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    # Your untracked file and the plan are where you left them; the tasks' files landed.
    assert (work / "notes.txt").read_text() == "yours, ignored by nobody\n"
    assert (work / "tasks.md").exists() and (work / "b.txt").read_text() == "B\n"


def test_git_clean_by_the_real_cli(tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hi\n")
    init_repo(work, "git")
    (work / "tasks.md").write_text("- SAY one\n- clean up\n")
    env = {**claude_env(tmp_path / "home", fake_api), "AGENT_LOOP_CLAUDE": str(claude_bin)}
    fake_api.script(Text("one done"), ToolUse("Bash", {"command": "git clean -qfdx -e tasks.md "
                                                                   "&& sleep 3"}),
                    Text("cleaned"), model="opus")
    first = start(work, env)
    second_run_is_refused_while_the_first_lives(work, env, first)
