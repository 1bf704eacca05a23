"""What a person sees once a stop is taken (Ctrl+C, SIGTERM) while an agent works: the run says
it is stopping and what it waits for, at once, instead of a live line that ticks on as if the
task still ran; then the usual closing lines. Read off a real pseudo-terminal, and off a pipe.
The fake agent lingers after its SIGINT (an agent slow to stop)."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from agentloop.console.gone import Steady
from agentloop.console.live import Console
from agentloop.run.events import RunFinished, Stopping
from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, state_of
from tests.support.terminal import on_a_terminal

AGENT_LOOP = str(Path(sys.executable).parent / "agent-loop")
LINGER = 3.0  # how long the agent goes on after its SIGINT
TASK = f"  FAKE: write a.txt hello\n  FAKE: pause 60\n  FAKE: linger {LINGER}\n"


def between(screens: list[tuple[float, str]], start: float, stop: float) -> list[str]:
    return [shown for at, shown in screens if start <= at <= stop]


def assert_stopping_at_once(screens: list[tuple[float, str]], expected: list[str]) -> None:
    """From a second after the Ctrl+C until the agent ends, the live lines are `expected`,
    unchanged: no elapsed time ticking on."""
    waiting = between(screens, 1.0, LINGER - 0.5)
    assert waiting, screens
    for shown in waiting:
        live = [x for x in shown.splitlines() if x.startswith(("  … ", "  ■ "))]
        assert live == expected, shown


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- Make a\n" + TASK)
    return tmp_path


@pytest.mark.parametrize("stops", [1, 2], ids=["ctrl-c", "ctrl-c-twice"])
def test_on_a_terminal_the_live_line_says_the_run_is_stopping_and_stops_ticking(
        work: Path, fake_claude: FakeClaude, stops: int) -> None:
    run = on_a_terminal([AGENT_LOOP, "tasks.md", "--vcs", "none"], work,
                        seen="1 turn, 1 tool call", stops=stops)
    assert_stopping_at_once(run.screens, [
        "  ■ stopping: waiting for the agent to end (cut short within 6s)"])
    # once stopped: the usual closing lines, the stop's line gone with the live view
    after = run.last
    assert run.code == 130, after
    assert "interrupted; state saved. Resume with: agent-loop tasks.md --vcs none" in after
    assert "stopping" not in after and "tool call" not in after, after


def test_on_a_terminal_each_lane_of_a_parallel_run_says_it_is_stopping(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("hello\n")
    init_repo(tmp_path, "git")
    (tmp_path / "tasks.md").write_text("## Back\n- Make a\n" + TASK + "\n## Front\n- Make b\n"
                                       + TASK.replace("a.txt", "b.txt"))
    run = on_a_terminal(
        [AGENT_LOOP, "tasks.md", "--vcs", "git", "--parallel", "2", "--no-distill"], tmp_path,
        seen="1 turn, 1 tool call", times=2, stops=1)
    # Every agent is stopped at once (SIGINT, then SIGTERM and SIGKILL 3s apart): 6s at most.
    waiting = "stopping: waiting for its agent to end (all cut short within 6s)"
    seen = between(run.screens, 1.0, LINGER - 0.5)
    assert seen, run.screens
    for shown in seen:
        live = sorted(x for x in shown.splitlines() if x.startswith(("  … ", "  ■ ")))
        assert live == [f"  ■ Back [1/2]: {waiting}", f"  ■ Front [2/2]: {waiting}"], shown
    after = run.last
    assert run.code == 130 and "interrupted; state saved" in after, after
    assert "stopping" not in after, after


def test_off_a_terminal_one_line_says_the_run_is_stopping_before_the_agent_ends(
        work: Path, fake_claude: FakeClaude) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    child = subprocess.Popen([AGENT_LOOP, "tasks.md", "--vcs", "none"], cwd=work, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert child.stdout is not None and child.stderr is not None
    lines: list[tuple[float, str]] = []
    pressed = 0.0
    for line in child.stdout:
        lines.append((time.monotonic() - pressed, line.rstrip("\n")))
        if "running…" in line and not pressed:
            time.sleep(1.0)  # the agent at work
            os.killpg(child.pid, signal.SIGINT)
            pressed = time.monotonic()
    err = child.stderr.read()
    assert child.wait(timeout=60) == 130, err
    said = [(at, x) for at, x in lines if "stopping" in x]
    assert [x for _, x in said] == [
        "agent-loop: stopping: waiting for the agent to end (cut short within 6s)"], lines
    assert said[0][0] < LINGER - 1, lines  # said as the stop is taken, not once the agent ended
    assert "interrupted; state saved" in err


# A pipe's reader that the Ctrl+C ends a moment after agent-loop heard it (a `tee` that a busy
# machine runs late): what is written into the pipe meanwhile is lost with it.
LATE_TEE = (f"{sys.executable} -c 'import os, signal, sys, time; "
            "signal.signal(signal.SIGINT, lambda *_: (time.sleep(0.3), os._exit(130))); "
            "log = open(sys.argv[1], \"ab\"); "
            "[(os.write(1, b), log.write(b), log.flush()) "
            "for b in iter(lambda: os.read(0, 65536), b\"\")]' ")


def in_a_shell(command: str, cwd: Path, seen: str) -> tuple[str, str]:
    """`command` typed in an interactive bash on a pseudo-terminal, as a person runs it: a
    pipeline is a job, its own foreground process group, and Ctrl+C (typed once `seen` shows)
    reaches every command in it. What the terminal showed before the Ctrl+C, and after it until
    the prompt came back."""
    env = {**os.environ, "PS1": "READY$ ", "TERM": "dumb"}
    env.pop("CI", None)
    env.pop("NO_COLOR", None)
    child, main = pty.fork()
    if child == 0:  # a session of its own, the pseudo-terminal its controlling terminal
        os.chdir(cwd)
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
    shown = b""

    def read_until(done: Callable[[bytes], bool]) -> None:
        nonlocal shown
        end = time.monotonic() + 90
        while not done(shown) and time.monotonic() < end:
            if select.select([main], [], [], 0.1)[0]:
                try:
                    shown += os.read(main, 65536)
                except OSError:  # the shell has gone
                    return

    try:
        read_until(lambda out: b"READY$ " in out)
        os.write(main, command.encode() + b"\n")
        read_until(lambda out: seen.encode() in out)
        time.sleep(1.0)  # the agent at work
        os.write(main, b"\x03")  # the terminal sends SIGINT to the foreground job
        pressed = len(shown)
        read_until(lambda out: b"READY$ " in out[pressed:])
        os.write(main, b"exit\n")
        read_until(lambda out: False if out else True)
    finally:
        os.close(main)
        os.waitpid(child, 0)
    before, after = shown[:pressed], shown[pressed:].split(b"READY$ ")[0]
    return tuple(x.decode(errors="replace").replace("\r", "") for x in (before, after))


@pytest.mark.parametrize("pipe", ["| tee", f"| {LATE_TEE}", "2>&1 | tee"],
                         ids=["tee", "late-tee", "stderr-too"])
def test_piped_through_tee_the_stop_s_lines_still_reach_the_terminal(
        work: Path, fake_claude: FakeClaude, pipe: str) -> None:
    # `agent-loop tasks.md | tee log` and Ctrl+C: tee ends of the same Ctrl+C, so what goes to
    # stdout from then on reaches nobody; the stop's lines go to stderr, the terminal (and with
    # `2>&1`, which sends stderr after it, to the terminal the Ctrl+C came from).
    before, after = in_a_shell(f"{AGENT_LOOP} tasks.md --vcs none {pipe} log", work,
                               seen="claude: running…")
    assert "claude: running…" in before, before
    lines = [x for x in after.splitlines() if x.strip()]
    assert lines == [
        "^C", "agent-loop: stopping: waiting for the agent to end (cut short within 6s)",
        *[x for x in lines if x.startswith("agent-loop stopped: 1 interrupted;")],
        "agent-loop: interrupted; state saved. Resume with: agent-loop tasks.md --vcs none"], after
    assert len(lines) == 4, after
    assert "claude: running…" in (work / "log").read_text()  # tee had all until the Ctrl+C
    assert [t["status"] for t in state_of(work)["tasks"]] == ["interrupted"]
    events = [json.loads(x) for x in (work / ".agent-loop" / "events.jsonl").read_text()
              .splitlines()]
    assert [e.get("stopped") for e in events if e["type"] == "RunFinished"] == ["interrupted"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_the_stopping_line_is_not_put_after_the_echoed_ctrl_c() -> None:
    # `agent-loop … | tee log`: the terminal echoes ^C on stderr's line, where the stopping
    # line (on stdout, shown by tee) would go on as "^Cagent-loop: stopping…".
    out, err = io.StringIO(), Terminal()
    console = Console(out, err=err, heartbeat=None, live=False)
    console(Stopping(1, 6.0))
    assert err.getvalue() == "\n"
    assert out.getvalue() == ("agent-loop: stopping: waiting for the agent to end "
                              "(cut short within 6s)\n")
    quiet = io.StringIO()  # stderr to a file: nothing echoed there, no empty line
    Console(io.StringIO(), err=quiet, heartbeat=None, live=False)(Stopping(1, 6.0))
    assert quiet.getvalue() == ""


def test_off_a_terminal_a_stop_with_no_agent_at_work_ends_after_the_echoed_ctrl_c() -> None:
    # Ctrl+C as a task lands, or as its on-task hook runs, with `| tee log`: no stopping line;
    # the outcome, on stderr once tee has ended of the same Ctrl+C, went on as
    # "^Cagent-loop stopped: …".
    read, write = os.pipe()
    os.close(read)  # tee has ended
    err = Terminal()
    console = Console(Steady(open(write, "w")), err=err, heartbeat=None, live=False)
    console(RunFinished((("completed", 1),), 0.01, 1.5, "/w/.agent-loop/logs",
                        stopped="interrupted"))
    assert err.getvalue().startswith("\nagent-loop stopped: 1 completed;"), err.getvalue()
    out, err = io.StringIO(), Terminal()  # stdout is there: its outcome ends the ^C's line
    Console(out, err=err, heartbeat=None, live=False)(
        RunFinished((("completed", 1),), 0.01, 1.5, "/w/.agent-loop/logs", stopped="interrupted"))
    assert err.getvalue() == "" and out.getvalue().startswith("\nagent-loop stopped: ")
    twice = Terminal()  # after the stopping line's: no second one
    console = Console(io.StringIO(), err=twice, heartbeat=None, live=False)
    console(Stopping(1, 6.0))
    console(RunFinished((("interrupted", 1),), 0.0, 1.5, "/w/.agent-loop/logs",
                        stopped="interrupted"))
    assert twice.getvalue() == "\n"
