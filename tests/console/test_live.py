"""A sign of life while an agent works: a live line on a terminal (read off a real pseudo-terminal
as a user's screen shows it), a plain line now and then elsewhere, one line per lane."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop import app
from agentloop.agents import AgentResult
from agentloop.console.lanes import Lanes
from agentloop.console.live import Console
from agentloop.options.record import RunOptions
from agentloop.run.events import (
    AgentActivity,
    AgentFinished,
    AgentStarted,
    CheckStarted,
    RunFinished,
    TaskFinished,
    TaskStarted,
)
from tests.support.fake_agent import FakeClaude
from tests.support.terminal import on_a_terminal


def finished(cost: float, lane: str = "") -> AgentFinished:
    return AgentFinished(AgentResult(ok=True, exit_code=0, session_id="s", text="done"), 1.0,
                         cost, lane=lane)


def test_a_lane_line_has_elapsed_time_last_tool_call_turns_and_cost_so_far() -> None:
    lanes = Lanes()
    lanes.update(TaskStarted(2, 4, "Backend", "Create the API", 1), 0.0)
    lanes.update(AgentStarted("log", None), 10.0)
    assert lanes.lines(11.0) == ["  … 1s · starting"]
    lanes.update(AgentActivity("Edit api.py", "Edit api.py", 1, 1), 12.0)
    lanes.update(AgentActivity("Now the tests.", "Edit api.py", 1, 2), 13.0)
    assert lanes.lines(75.0) == ["  … 1m05s · 2 turns, 1 tool call · Edit api.py"]
    lanes.update(finished(0.21), 80.0)
    assert lanes.lines(81.0) == [] and not lanes.busy()
    # the task's review round: the cost so far is what its finished runs cost
    lanes.update(AgentStarted("log", None, role="reviewer"), 90.0)
    assert lanes.lines(91.0) == ["  … 1s · $0.2100 so far · reviewer starting"]
    lanes.update(finished(0.04), 95.0)
    lanes.update(TaskStarted(3, 4, "Backend", "Next", 1), 96.0)
    lanes.update(CheckStarted(3, "pytest -q", 0, "log"), 97.0)
    assert lanes.lines(99.0) == ["  … 2s · check: pytest -q"]


def test_several_lanes_get_a_line_each_led_by_their_name_and_task() -> None:
    lanes = Lanes()
    for lane, index in (("Backend", 1), ("Frontend", 3)):
        lanes.update(TaskStarted(index, 4, lane, "x", 1, lane=lane), 0.0)
        lanes.update(AgentStarted("log", None, lane=lane), 0.0)
    lanes.update(AgentActivity("Bash npm test", "Bash npm test", 3, 2, lane="Frontend"), 5.0)
    lanes.update(finished(0.5, lane="Backend"), 6.0)
    lanes.update(AgentStarted("log", None, lane="Backend"), 7.0)
    assert lanes.lines(10.0) == [
        "  … Backend [1/4]: 3s · $0.5000 so far · starting",
        "  … Frontend [3/4]: 10s · 2 turns, 3 tool calls · Bash npm test"]


def test_a_stopped_run_leaves_no_lane_working() -> None:
    # Ctrl+C in a parallel run: the interrupted lanes never report their agent's end, and the
    # run's closing lines must not be followed by a live line that outlived it.
    lanes = Lanes()
    for lane in ("Backend", "Frontend"):
        lanes.update(TaskStarted(1, 2, lane, "x", 1, lane=lane), 0.0)
        lanes.update(AgentStarted("log", None, lane=lane), 0.0)
    assert lanes.busy()
    lanes.update(RunFinished(counts=(("interrupted", 2),), cost_usd=0.0, seconds=1.0,
                             logs="l"), 2.0)
    assert not lanes.busy() and lanes.lines(3.0) == []


def test_the_heartbeat_is_due_once_an_interval_after_the_run_began_and_then_each_interval() -> None:
    lanes = Lanes()
    lanes.update(AgentStarted("log", None), 100.0)
    assert lanes.due(159.0, 60) == []
    assert lanes.due(160.0, 60) == ["  … 1m00s · starting"]
    assert lanes.due(200.0, 60) == []
    assert lanes.due(220.0, 60) == ["  … 2m00s · starting"]
    lanes.update(TaskFinished(1, "completed", None, 0, None), 230.0)
    assert lanes.due(1000.0, 60) == []


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- Make a\n  FAKE: write a.txt hello\n  FAKE: pause 2\n")
    return tmp_path


def test_off_a_terminal_a_working_agent_gets_a_plain_line_now_and_then(
        work: Path, fake_claude: FakeClaude) -> None:
    out = io.StringIO()
    app.run(Path("tasks.md"), work, RunOptions(vcs="none"), Console(out, cwd=work, heartbeat=0.5))
    text = out.getvalue()
    beats = [line for line in text.splitlines() if line.startswith("  … ")]
    # (a slow start of the fake may give a beat before its tool call: "… 0s · starting")
    working = [b for b in beats if b.endswith("s · 1 turn, 1 tool call · Write a.txt")]
    assert len(working) >= 2, text
    assert "\r" not in text and "\x1b" not in text
    # the beats stand between the agent's start and its end
    lines = text.splitlines()
    assert lines.index(beats[0]) > next(i for i, x in enumerate(lines) if "running…" in x)
    assert lines.index(beats[-1]) < next(i for i, x in enumerate(lines) if "completed" in x)


def test_off_a_terminal_rich_is_never_imported() -> None:
    probe = ("import io, sys\nfrom agentloop.console.live import Console\n"
             "from agentloop.run.events import AgentStarted, AgentActivity\n"
             "c = Console(io.StringIO(), heartbeat=0.1)\n"
             "c(AgentStarted('log', None)); c(AgentActivity('Edit a', 'Edit a', 1, 1))\n"
             "print('rich' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_on_a_terminal_one_live_line_shows_the_agent_at_work_and_goes_when_it_ends(
        work: Path, fake_claude: FakeClaude) -> None:
    program = Path(sys.executable).parent / "agent-loop"
    run = on_a_terminal([str(program), "tasks.md", "--vcs", "none"], work,
                        seen="1 turn, 1 tool call", timeout=60)
    during, after = run.first, run.last
    live = [x.rstrip() for x in during.splitlines() if "1 turn, 1 tool call" in x]
    assert len(live) == 1 and live[0].startswith("  … ") and live[0].endswith(" · Write a.txt")
    assert "claude: running…" in during  # the run's own lines stand above it
    assert "agent-loop done: 1 completed" in after
    assert "tool call" not in after  # the live line is gone once the agent is done


def test_the_first_line_says_where_a_finished_task_lands_for_each_vcs(tmp_path: Path) -> None:
    from agentloop.console.live import run_started_line
    from agentloop.run.events import RunStarted

    lanes = str(tmp_path / ".agent-loop" / "lanes")
    git = run_started_line(RunStarted(2, 2, "git", agent="claude", in_lane=True, lanes=lanes),
                           tmp_path)
    jj = run_started_line(RunStarted(2, 2, "jj", agent="claude", in_lane=True, lanes=lanes),
                          tmp_path)
    assert git.endswith("each finished task landing on your branch)")
    # jj moves no bookmark by itself: "your branch" would not be where a jj run's tasks are
    assert jj.endswith("each finished task landing below your working copy "
                       "(jj moves no bookmark))")
