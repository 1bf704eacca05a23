"""What an agent leaves running ends with its run: background jobs in its group, `setsid`
escapes and double forks, and a child that holds its stdout open."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from agentloop import proc


def alive(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2] != "Z"


def run(tmp_path: Path, script: str) -> tuple[proc.Streamed, float]:
    lines: list[bytes] = []
    started = time.monotonic()
    done = proc.stream(["bash", "-c", script], lines.append, cwd=tmp_path, timeout=60)
    return done, time.monotonic() - started


def test_background_setsid_and_double_forked_children_end_with_the_run(tmp_path: Path) -> None:
    script = ("(sleep 1000 & echo $! > bg.pid); "
              "setsid sleep 1000 > /dev/null 2>&1 < /dev/null & echo $! > sid.pid; "
              "( ( setsid sleep 1000 > /dev/null 2>&1 < /dev/null & echo $! > deep.pid ) & ); "
              "sleep 0.2; echo done")
    done, _ = run(tmp_path, script)
    assert done.returncode == 0 and not done.timed_out
    time.sleep(0.2)
    for name in ("bg.pid", "sid.pid", "deep.pid"):
        assert not alive(tmp_path / name), name


def test_a_child_holding_stdout_does_not_hold_the_run(tmp_path: Path) -> None:
    # The agent answers and exits; a server it started keeps stdout open (setsid: out of the
    # group). The run is over after a short grace, not at its timeout, and it did not time out.
    script = "setsid sleep 1000 & echo $! > holder.pid; echo '{\"type\": \"result\"}'"
    done, seconds = run(tmp_path, script)
    assert done.returncode == 0 and not done.timed_out
    assert seconds < 10
    time.sleep(0.2)
    assert not alive(tmp_path / "holder.pid")


def test_a_whole_run_leaves_nothing_behind(tmp_path: Path) -> None:
    # agent-loop as a process, with a fake agent that starts a setsid server and exits 0.
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/bash\ncat > /dev/null\nsetsid sleep 1000 > /dev/null 2>&1 &\n"
                     "echo $! > server.pid\n"
                     "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}'\n"
                     "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
                     "\"result\":\"ok\",\"session_id\":\"s\"}'\n")
    agent.chmod(0o755)
    (tmp_path / "tasks.md").write_text("- one\n")
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none",
                           "--agent-program", str(agent)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "IS_SANDBOX": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    time.sleep(0.2)
    assert not alive(tmp_path / "server.pid")


def test_the_cheap_listing_of_children_agrees_with_the_full_scan() -> None:
    from agentloop.proc import reaper

    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        mine = {p.pid for p in sleepers}
        assert mine <= reaper.children()
        assert reaper.children() == reaper._scan(os.getpid())
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
    assert not mine & reaper.children()
