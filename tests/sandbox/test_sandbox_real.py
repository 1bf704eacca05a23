"""--sandbox against what an injected prompt would have the agent do, with the REAL Claude Code CLI
(and the real Codex CLI) against the fake APIs: the fake tells the agent's own shell tool to
steal a planted key, write into the home folder, the user's checkout and another lane, delete the
run's state, kill agent-loop and leave a process behind. Each test runs the same plan twice:
without the sandbox every command succeeds (so the test proves the sandbox does the work), with
it every one fails while the task's own edit still lands.

bubblewrap must be installed and able to make a sandbox (scripts/test.sh installs it where it
runs as root on Debian); elsewhere these tests skip and say why.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from agentloop.vcs.lanes import plan_key, plan_lane
from tests.run.test_real import TASKS, _processes, state_of
from tests.support.claude_cli import agent_loop_env, claude_env
from tests.support.codex_cli import codex_env, require_codex
from tests.support.fake_openai import FakeOpenAI
from tests.support.fakeapi import Directed, FakeApi, Hang, last_user_text
from tests.support.repos import git, init_repo
from tests.support.runner import agent_loop

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted-by-the-test"
# A sleep no other process on the machine runs: the process the agent leaves behind.
LEFT_BEHIND = "424242.5"


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot make a sandbox on this machine, or None."""
    from agentloop.sandbox import SandboxUnavailable, tool_for

    try:
        tool_for().check()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"no sandbox here: {bwrap_problem()}")


def hostile(root: Path, other: Path) -> str:
    """One shell line that tries everything, noting each command's exit status in report.txt in
    the agent's own folder (~/.claude, writable in the sandbox too: a killed run's lane is gone
    afterwards), in an order that keeps each one meaningful: the kill last."""
    steps = [
        ("ssh", "cat ~/.ssh/id_ed25519 > stolen.txt"),
        ("home", "echo pwned > ~/pwned.txt"),
        ("checkout", f"echo intruder > {root}/intruder.txt"),
        # The other lane is made at about the same time as ours: wait for it (bounded).
        ("lane", f"for i in $(seq 150); do [ -d {other}/.git ] || [ -f {other}/.git ] && break; "
                 f"sleep 0.1; done; echo intruder > {other}/intruder.txt"),
        ("state", f"rm {root}/.agent-loop/state.json"),
        ("background", f"(setsid sleep {LEFT_BEHIND} >/dev/null 2>&1 &)"),
        ("marker", "echo done > hostile-done"),
        ("kill", f"kill -TERM $(cat {root}/.agent-loop/run.pid)"),
    ]
    return "; ".join(f"{cmd}; echo \"{name} $?\" >> ~/.claude/report.txt" for name, cmd in steps)


def plan(root: Path) -> str:
    lanes = root / ".agent-loop" / "lanes"
    key = plan_key("tasks.md")   # every plan's lanes carry its key
    # The other group's agent waits (bounded) until the intruder is done, so its lane is there
    # to be written into.
    marker = f"{lanes}/{plan_lane(key, 1, 'Intruder')}/hostile-done"
    wait = f"for i in $(seq 300); do [ -e {marker} ] && break; sleep 0.1; done"
    return (f"# Sandbox\n\n## Intruder\n- WRITE legit.txt: the legit edit\n"
            f"  RUN {hostile(root, lanes / plan_lane(key, 2, 'Other'))}\n\n"
            f"## Other\n- WRITE other.txt: the other edit\n  RUN {wait}\n")


def report(text: str) -> dict[str, int]:
    return {name: int(code) for name, code in (line.split() for line in text.splitlines())}


def left_behind() -> list[int]:
    """The pids of the process the agent left running, if it still runs."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.split(b"\0")[:2] == [b"sleep", LEFT_BEHIND.encode()]:
            found.append(int(pid))
    return found


@pytest.fixture(autouse=True)
def end_left_behind() -> object:
    yield None
    for pid in left_behind():  # what a run without the sandbox left: never outlives the test
        os.kill(pid, signal.SIGKILL)


def project(tmp_path: Path) -> tuple[Path, Path]:
    """(the repository, the agent's home with a planted key)."""
    work = (tmp_path / "work").resolve()
    work.mkdir(parents=True)
    (work / "README.md").write_text("hello\n")
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(work))
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    home = tmp_path / "agent-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SECRET + "\n")
    return work, home


@needs_bwrap
def test_every_hostile_command_fails_inside_the_sandbox_and_succeeds_without(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    # Without the sandbox: every command does what it says, and agent-loop itself is killed.
    work, home = project(tmp_path / "open")
    env = {**claude_env(home, fake_api), "AGENT_LOOP_CLAUDE": str(claude_bin), "NO_COLOR": "1"}
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-sandbox", env=env)
    # The kill reached agent-loop: it stopped as it does on SIGTERM, with the agents.
    assert done.returncode == 130, (done.returncode, done.stdout + done.stderr)
    noted = report((home / ".claude" / "report.txt").read_text())
    # Its own note of the kill comes too late or not at all: the stop ends the agent too.
    assert noted.pop("kill", 0) == 0
    assert noted == {"ssh": 0, "home": 0, "checkout": 0, "lane": 0, "state": 0,
                     "background": 0, "marker": 0}, noted
    assert (home / "pwned.txt").exists()
    assert (work / "intruder.txt").exists()

    # With it: every one fails, both tasks' edits land, the run ends well.
    work, home = project(tmp_path / "boxed")
    env = {**claude_env(home, fake_api), "AGENT_LOOP_CLAUDE": str(claude_bin), "NO_COLOR": "1"}
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--sandbox", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap): agents write only their working copy" in out
    assert "Claude Code's own: off for tasks" in out
    assert (work / "legit.txt").read_text() == "the legit edit\n"
    assert (work / "other.txt").read_text() == "the other edit\n"
    noted = report((home / ".claude" / "report.txt").read_text())
    assert noted.pop("marker") == 0  # its own working copy it may write
    # A process it starts runs inside the sandbox, and ends with it.
    assert noted.pop("background") == 0
    assert all(code != 0 for code in noted.values()), noted
    assert SECRET not in (work / "stolen.txt").read_text()
    assert not (home / "pwned.txt").exists()
    assert not (work / "intruder.txt").exists()
    assert "intruder.txt" not in git(work, "ls-tree", "-r", "--name-only", "HEAD")
    assert (work / ".agent-loop" / "state.json").exists()
    assert not left_behind()


def root_hostile(root: Path) -> str:
    """What an agent in the repository root (`--workplace checkout`) tries: the key, the home
    folder, the run's state, the repository's git config (agent-loop's own git would read it),
    a process left behind, agent-loop itself; noted in ~/.codex/report.txt."""
    steps = [
        ("ssh", "cat ~/.ssh/id_ed25519 > stolen.txt"),
        ("home", "echo pwned > ~/pwned.txt"),
        ("state", "rm .agent-loop/state.json"),
        ("gitconfig", "git config core.fsmonitor 'touch owned' && grep -q fsmonitor .git/config"),
        ("background", f"(setsid sleep {LEFT_BEHIND} >/dev/null 2>&1 &)"),
        ("kill", f"kill -TERM $(cat {root}/.agent-loop/run.pid)"),
    ]
    return "; ".join(f"{cmd}; echo \"{name} $?\" >> ~/.codex/report.txt" for name, cmd in steps)


@needs_bwrap
def test_the_real_codex_cli_is_held_by_the_sandbox_too(tmp_path: Path,
                                                        fake_openai: FakeOpenAI) -> None:
    def codex_project(where: Path) -> tuple[Path, dict[str, str]]:
        work = (where / "work").resolve()
        work.mkdir(parents=True)
        (work / "README.md").write_text("hello\n")
        init_repo(work, "git")
        (work / "tasks.md").write_text(f"# Codex\n\n- WRITE legit.txt: the legit edit\n"
                                       f"  RUN {root_hostile(work)}\n")
        git(work, "add", "tasks.md")
        git(work, "commit", "-qm", "plan")
        env = codex_env(where / "home", fake_openai)
        env.update({"AGENT_LOOP_CODEX": str(require_codex()), "NO_COLOR": "1"})
        (where / "home" / ".ssh").mkdir()
        (where / "home" / ".ssh" / "id_ed25519").write_text(SECRET + "\n")
        return work, env

    work, env = codex_project(tmp_path / "open")
    # The agent in your checkout, where the run's state and .git/config are at hand (in a lane,
    # test_sandbox's lane tests say what an agent reaches).
    done = agent_loop(work, "--agent", "codex", "--vcs", "git", "--no-distill", "--no-sandbox",
                      "--workplace", "checkout", env=env)
    assert done.returncode == 130, (done.returncode, done.stdout + done.stderr)
    noted = report((Path(env["CODEX_HOME"]) / "report.txt").read_text())
    noted.pop("kill", None)
    # (the interrupted attempt's files, stolen.txt among them, went with it)
    assert noted == {"ssh": 0, "home": 0, "state": 0, "gitconfig": 0, "background": 0}, noted
    assert "fsmonitor" in (work / ".git" / "config").read_text()

    work, env = codex_project(tmp_path / "boxed")
    done = agent_loop(work, "--agent", "codex", "--vcs", "git", "--no-distill", "--sandbox",
                      "--workplace", "checkout", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Codex's own: off for tasks" in done.stdout + done.stderr
    assert git(work, "show", "HEAD:legit.txt") == "the legit edit\n"
    noted = report((Path(env["CODEX_HOME"]) / "report.txt").read_text())
    assert noted.pop("background") == 0
    assert all(code != 0 for code in noted.values()), noted
    assert SECRET not in (work / "stolen.txt").read_text()
    assert not (Path(env["HOME"]) / "pwned.txt").exists()
    assert "fsmonitor" not in (work / ".git" / "config").read_text()
    assert (work / ".agent-loop" / "state.json").exists()
    assert not left_behind()


@needs_bwrap
def test_ctrl_c_stops_a_sandboxed_agent_and_the_group_resumes_its_session(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text(TASKS)
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    # Task 1 writes a file (a tool call, then its final text); task 2's first request hangs.
    fake_api.script(Directed(), Directed(), Hang())
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none",
                             "--sandbox", "--task", "1-2"], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(fake_api.requests_for_messages()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(fake_api.requests_for_messages()) == 3, "task 2 never reached the API"
    tool.send_signal(signal.SIGINT)
    _, err = tool.communicate(timeout=60)
    assert tool.returncode == 130, err
    assert not any(str(claude_bin) in p for p in _processes())

    again = agent_loop(work, "--vcs", "none", "--sandbox", "--task", "2", env=env)
    assert again.returncode == 0, again.stderr
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks[:2]] == ["completed", "completed"]
    # Inside the sandbox as outside: task 2 resumed task 1's session, its exchange carried.
    assert tasks[1]["session_id"] == tasks[0]["session_id"]
    rerun = [r for r in fake_api.requests_for_messages()[3:]
             if "api-test.txt" in last_user_text(r.body)][0]
    assert "WRITE api.txt: the api" in orjson.dumps(rerun.body["messages"]).decode()
