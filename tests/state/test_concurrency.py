"""Two runs started together on one folder: exactly one works, the other names it and leaves.

tests/cli/test_cli.py starts the second run once the first is well under way; here both start at
the same instant, again and again, on a fresh folder (both race to create `.agent-loop/` and,
with git, the repository) and on one a killed run left its stale `run.pid` in.
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

from tests.support.fake_agent import FakeClaude

REPEATS = 3


def launch(work: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def dead_pid() -> int:
    """The pid of a process that has exited, as a SIGKILLed run leaves in run.pid."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def status(work: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--status", "--json"],
                          cwd=work, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


@pytest.mark.parametrize("vcs, stale_pid", [("none", False), ("none", True), ("git", False),
                                             ("git", True)])
def test_two_runs_started_together(tmp_path: Path, fake_claude: FakeClaude, vcs: str,
                                   stale_pid: bool) -> None:
    for n in range(REPEATS):
        work = tmp_path / f"race{n}"
        work.mkdir()
        (work / "tasks.md").write_text(f"- the only task\n  FAKE: write out.txt {n}\n"
                                       "  FAKE: sleep 1\n")
        if stale_pid:
            (work / ".agent-loop").mkdir()
            (work / ".agent-loop" / "run.pid").write_text(f"{dead_pid()}\n")
        calls_before = len(fake_claude.task_runs())
        runs = [launch(work, "--vcs", vcs), launch(work, "--vcs", vcs)]
        try:
            deadline = time.monotonic() + 30
            while all(r.poll() is None for r in runs) and time.monotonic() < deadline:
                time.sleep(0.01)
            losers = [r for r in runs if r.poll() is not None]
            assert len(losers) == 1, f"race {n}: neither run gave way"
            loser, = losers
            winner, = [r for r in runs if r is not loser]
            _, err = loser.communicate()
            assert loser.returncode == 1, err
            assert err.startswith("agent-loop: error: another agent-loop run holds "), err
            # the holder named with its command line: which plan's run to wait for
            assert f"(pid {winner.pid}: agent-loop tasks.md" in err, f"race {n}: {err}"
            assert err.count("\n") == 1 and "Traceback" not in err
            # --status takes no lock: it shows the winner's run while it goes on.
            while not (work / ".agent-loop" / "state.json").exists():
                assert winner.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
            shown = status(work)
            assert winner.poll() is None, "the run ended before --status could look at it"
            assert [t["status"] for t in shown["tasks"]] in (["pending"], ["running"])
            out, err = winner.communicate(timeout=60)
        finally:
            for r in runs:
                if r.poll() is None:
                    r.send_signal(signal.SIGTERM)
                    r.communicate(timeout=30)
        assert winner.returncode == 0, err
        assert [t["status"] for t in status(work)["tasks"]] == ["completed"]
        assert len(fake_claude.task_runs()) == calls_before + 1  # the task ran once
        assert (work / "out.txt").read_text() == f"{n}\n"
        assert not (work / ".agent-loop" / "run.pid").exists()


def test_the_holder_named_in_one_line_without_what_env_gives_its_agent(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The refused run names the holder's command line: a hook script of two lines (and an
    # escape a terminal would obey) is quoted, not printed as is, and a key given the agent
    # with --env is not printed at all (a CI log keeps what a refused run says).
    (tmp_path / "tasks.md").write_text("- the only task\n  FAKE: sleep 30\n")
    holder = launch(tmp_path, "--vcs", "none", "--no-distill", "--on-finish",
                    "echo one\necho \x1b[31mtwo", "--env", "API_KEY=sk-secret-1",
                    "--env=OTHER=sk-secret-2")
    try:
        deadline = time.monotonic() + 30
        while not fake_claude.task_runs():
            assert holder.poll() is None and time.monotonic() < deadline, holder.communicate()
            time.sleep(0.05)
        refused = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none"],
                                 cwd=tmp_path, capture_output=True, text=True, timeout=30)
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=30)
    err = refused.stderr
    assert refused.returncode == 1 and err.count("\n") == 1 and "\x1b" not in err, repr(err)
    assert f"(pid {holder.pid}: agent-loop tasks.md --vcs none" in err, err
    assert "'echo one\\necho \\x1b[31mtwo'" in err, err
    assert "sk-secret" not in err and "--env API_KEY=..." in err, err
