"""The agent starts without the marks of an agent session around agent-loop (Claude Code's,
Codex's), without a hook's variables, with what `env` adds and without what `env-exclude`
removes; the user's own variables (credentials, PATH) stay."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agentloop import AGENT_REFLOG_ACTION
from agentloop.agents.environment import SESSION_VARIABLES, child_env
from tests.support.claude_cli import claude_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi, ToolUse
from tests.support.repos import git_project
from tests.support.runner import agent_loop

# What a Claude Code or Codex session hands the commands it runs, a hook's variable, and the
# reflog mark an agent of another agent-loop run (one around this one) has.
OUTER_MARK = "agent-loop agent"
CALLER = {"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_CODE_SSE_PORT": "43111",
          "CLAUDE_CODE_SESSION_ID": "outer", "CODEX_SANDBOX": "seatbelt",
          "CODEX_SANDBOX_NETWORK_DISABLED": "1", "CODEX_THREAD_ID": "thread-1",
          "AGENT_LOOP_EVENT_RESULT": "done", "MY_SECRET": "s3", "MY_TOKEN": "keep-me",
          "GIT_REFLOG_ACTION": OUTER_MARK}


# How these tests start agent-loop: the variables a user adds and removes for the agent.
ENV_FLAGS = ("--vcs", "none", "--no-distill", "--env", "ADDED=yes", "--env-exclude", "MY_SECRET")


def test_child_env_keeps_the_users_variables() -> None:
    env = child_env({"PATH": "/bin", "HOME": "/h", "ANTHROPIC_API_KEY": "k", "CLAUDECODE": "1",
                     "CODEX_HOME": "/c", "X": "1", "AGENT_LOOP_EVENT_HOOK": "on-task",
                     "GIT_REFLOG_ACTION": OUTER_MARK},
                    add=[("CLAUDECODE", "mine")], exclude=["X"], prefixes=["AGENT_LOOP_EVENT_"])
    assert env == {"PATH": "/bin", "HOME": "/h", "ANTHROPIC_API_KEY": "k", "CODEX_HOME": "/c",
                   "CLAUDECODE": "mine",   # a variable the user adds on purpose is theirs
                   # this run's mark on its agents' commits in HEAD's reflog (vcs/git/reflog),
                   # in place of the one an agent-loop around it gave
                   "GIT_REFLOG_ACTION": AGENT_REFLOG_ACTION}
    assert re.fullmatch(r"agent-loop agent [0-9a-f]{8}", AGENT_REFLOG_ACTION)
    assert "CLAUDECODE" in SESSION_VARIABLES and "CODEX_SANDBOX" in SESSION_VARIABLES


def test_the_fake_agent_starts_sealed(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n")
    done = agent_loop(work, *ENV_FLAGS, env={**os.environ, **CALLER})
    assert done.returncode == 0, done.stdout + done.stderr
    (call,) = fake_claude.calls()
    seen = call["env"]
    for name in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT",
                 "CLAUDE_CODE_SESSION_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
                 "CODEX_THREAD_ID", "AGENT_LOOP_EVENT_RESULT", "MY_SECRET"):
        assert name not in seen, name
    assert seen["ADDED"] == "yes" and seen["MY_TOKEN"] == "keep-me"
    assert seen["PATH"] == os.environ["PATH"] and seen["HOME"] == os.environ["HOME"]
    _own_mark(seen["GIT_REFLOG_ACTION"])


def test_the_real_cli_and_its_shell_start_sealed(tmp_path: Path, fake_api: FakeApi,
                                                 claude_bin: Path) -> None:
    """The real Claude CLI against the fake API runs `env` with its Bash tool: what the agent's
    own commands see. (The CLI sets CLAUDECODE and CLAUDE_CODE_ENTRYPOINT itself for its
    commands, so those two are read from what reached the CLI: not the caller's values.)"""
    work = git_project(tmp_path, "- dump the environment\n")
    env = {**claude_env(tmp_path / "home", fake_api), "AGENT_LOOP_CLAUDE": str(claude_bin)}
    fake_api.script(ToolUse("Bash", {"command": "env > env.txt", "description": "env"}),
                    model="opus")
    done = agent_loop(work, *ENV_FLAGS, env={**env, **CALLER})
    assert done.returncode == 0, done.stdout + done.stderr
    seen = dict(line.split("=", 1) for line in (work / "env.txt").read_text().splitlines()
                if "=" in line)
    for name in ("CLAUDE_CODE_SSE_PORT", "CODEX_SANDBOX",
                 "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID", "AGENT_LOOP_EVENT_RESULT",
                 "MY_SECRET"):
        assert name not in seen, name
    assert seen.get("CLAUDE_CODE_ENTRYPOINT") != "cli"
    assert seen.get("CLAUDE_CODE_SESSION_ID") != "outer"
    # Every variable the CLI sets for its own commands is one a nested agent-loop removes.
    set_by_cli = {k for k in seen if k.startswith(("CLAUDE", "CODEX")) and k not in env}
    assert set_by_cli <= set(SESSION_VARIABLES), set_by_cli - set(SESSION_VARIABLES)
    assert seen["ADDED"] == "yes" and seen["MY_TOKEN"] == "keep-me"
    assert seen["ANTHROPIC_API_KEY"] == "sk-ant-fake-key"
    # The agent's git commands carry its run's mark into the reflog (agentloop.vcs.git.reflog).
    _own_mark(seen["GIT_REFLOG_ACTION"])


def _own_mark(mark: str) -> None:
    """`mark` is a run's own (agent-loop as a process: not this test process's), not the one
    the agent-loop around it handed down."""
    assert re.fullmatch(r"agent-loop agent [0-9a-f]{8}", mark), mark
    assert mark not in (OUTER_MARK, AGENT_REFLOG_ACTION), mark


def test_an_agent_in_a_lane_starts_each_task_with_its_environment_encoded_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent in a lane runs with one variable of its own on top of the agent's environment
    (its lane's reflog mark): that environment was a dict made anew each task, one no start
    had seen, so Popen encoded its hundred-odd names and values again before every agent. The
    same dict now comes back while nothing in it changed (the start encodes it once and keeps
    it by identity, agentloop.proc.environ), and a new one when something did."""
    from agentloop import proc
    from agentloop.agents import AgentRun
    from agentloop.agents.common import stream_run

    given: list[object] = []

    def stream(argv: list[str], on_line: object, **kwargs: object) -> proc.Streamed:
        given.append(kwargs["env"])
        return proc.Streamed(argv, 0, "", False, 0.0)
    monkeypatch.setattr(proc, "stream", stream)

    class Log:
        def feed(self, line: bytes) -> None: ...
        def start(self) -> None: ...
        def stopped(self) -> None: ...

    mark = (("GIT_REFLOG_ACTION", "agent-loop agent lane-1"),)
    run = AgentRun("p", "m", tmp_path, tmp_path / "a.log", tmp_path / "a.jsonl", env=mark)
    for _ in range(3):
        stream_run(Log(), None, ["agent"], run, None, (), b"")  # type: ignore[arg-type]
    assert given[0] is given[1] is given[2]
    assert given[0] == {**os.environ, "GIT_REFLOG_ACTION": "agent-loop agent lane-1"}
    other = AgentRun("p", "m", tmp_path, tmp_path / "a.log", tmp_path / "a.jsonl",
                     env=(("GIT_REFLOG_ACTION", "agent-loop agent lane-2"),))
    stream_run(Log(), None, ["agent"], other, None, (), b"")  # type: ignore[arg-type]
    monkeypatch.setenv("ADDED_MEANWHILE", "1")
    stream_run(Log(), None, ["agent"], run, None, (), b"")  # type: ignore[arg-type]
    assert given[3]["GIT_REFLOG_ACTION"] == "agent-loop agent lane-2"  # type: ignore[index]
    assert given[4] is not given[0] and given[4]["ADDED_MEANWHILE"] == "1"  # type: ignore[index]
