"""Hooks: on-task after each completed task, on-finish on every way a run ends (done, failed,
stopped, interrupted), in the repository root, with the summary on stdin and AGENT_LOOP_EVENT_*
variables; a failing or hanging hook is said in one line and changes nothing else."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git_project
from tests.support.runner import agent_loop

# A hook that appends what it was given (stdin, its variables, where it ran) to a JSONL file.
RECORD = """
import json, os, sys
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({"stdin": json.loads(sys.stdin.read()), "cwd": os.getcwd(),
              "env": {k: v for k, v in os.environ.items() if k.startswith("AGENT_LOOP_")}})
              + "\\n")
"""


def recorder(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "record.py"
    script.write_text(RECORD)
    out = tmp_path / "hooks.jsonl"
    return shlex.join([sys.executable, str(script), str(out)]), out


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def test_done_runs_on_task_per_task_and_on_finish_once(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "# Plan\n\n## Build\n- first\n  FAKE: write a.txt A\n"
                                 "- second\n  FAKE: write b.txt B\n")
    hook, out = recorder(tmp_path)
    # From the settings file, and started from a subfolder: hooks still run in the root.
    (work / "agent-loop.toml").write_text(f"on-task = {json.dumps(hook)}\n"
                                          f"on-finish = {json.dumps(hook)}\n")
    (work / "sub").mkdir()
    done = agent_loop(work / "sub", "--vcs", "git", "--no-distill", "--allow-dirty",
                      plan="../tasks.md")
    assert done.returncode == 0, done.stdout + done.stderr
    first, second, finish = records(out)
    assert {r["cwd"] for r in (first, second, finish)} == {str(work)}
    assert first["stdin"]["hook"] == "on-task" and first["stdin"]["task"]["index"] == 1
    assert (first["stdin"]["task"]["summary"], first["stdin"]["task"]["group"]) == (
        "first", "Build")
    assert first["stdin"]["task"]["change_id"] and first["stdin"]["task"]["cost_usd"] > 0
    assert first["env"]["AGENT_LOOP_EVENT_TASK"] == "1"
    assert second["env"]["AGENT_LOOP_EVENT_RESULT"] == "completed"
    assert finish["stdin"]["result"] == "done" and finish["stdin"]["exit_code"] == 0
    assert finish["stdin"]["counts"] == {"completed": 2}
    assert finish["stdin"]["plan"] == str(work / "tasks.md")
    assert finish["env"]["AGENT_LOOP_EVENT_RESULT"] == "done"
    assert finish["env"]["AGENT_LOOP_EVENT_COMPLETED"] == "2"
    assert finish["env"]["AGENT_LOOP_EVENT_EXIT_CODE"] == "0"
    assert "hook" not in done.stdout   # a hook that did fine says nothing
    assert "on-finish" in (work / ".agent-loop" / "hooks.log").read_text()


def test_a_run_with_a_failed_task_is_failed_with_its_exit_code(tmp_path: Path,
                                                             fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- broken\n  FAKE: fail 9\n- fine\n")
    hook, out = recorder(tmp_path)
    done = agent_loop(work, "--no-distill", "--vcs", "none", "--max-attempts", "1",
                      "--on-finish", hook, "--on-task", hook)
    assert done.returncode == 4, done.stdout + done.stderr
    task, finish = records(out)
    assert task["stdin"]["task"]["index"] == 2   # the failed task is no completed one
    assert (finish["stdin"]["result"], finish["stdin"]["exit_code"]) == ("failed", 4)
    assert finish["stdin"]["unfinished"] == [1]
    assert finish["env"]["AGENT_LOOP_EVENT_FAILED"] == "1"


def test_a_stopped_run_says_why(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n")
    hook, out = recorder(tmp_path)
    done = agent_loop(work, "--no-distill", "--vcs", "none", "--budget", "0", "--on-finish", hook)
    assert done.returncode == 1 and "budget reached" in done.stderr, done.stderr
    (finish,) = records(out)
    assert (finish["stdin"]["result"], finish["stdin"]["exit_code"]) == ("stopped", 1)
    assert "budget reached" in finish["stdin"]["reason"]
    assert not fake_claude.calls()


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.02)


def start(work: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                             "--vcs", "none", *args], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_ctrl_c_runs_on_finish_after_the_state_is_saved(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- slow\n  FAKE: sleep 30\n")
    hook, out = recorder(tmp_path)
    saw_state = f"cp .agent-loop/state.json {shlex.quote(str(tmp_path / 'state-seen.json'))}"
    child = start(work, "--on-finish", f"{saw_state}; {hook}")
    wait_for(fake_claude.log)
    os.killpg(child.pid, signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stdout + stderr
    (finish,) = records(out)
    assert (finish["stdin"]["result"], finish["stdin"]["exit_code"]) == ("interrupted", 130)
    saved = json.loads((tmp_path / "state-seen.json").read_text())
    assert saved["tasks"][0]["status"] == "interrupted"


# on-task: one group at a time, the lane runs in the thread Ctrl+C reaches, and its task's
# records are saved and said before the hook starts; the hook is no part of that.
@pytest.mark.parametrize("hook, plan", [("--on-finish", "- one\n"),
                                        ("--on-task", "- one\n- two\n")])
def test_ctrl_c_during_a_hook_stops_it_at_once(tmp_path: Path, fake_claude: FakeClaude,
                                               hook: str, plan: str) -> None:
    work = git_project(tmp_path, plan)
    began, after = tmp_path / "began", tmp_path / "after"
    child = start(work, hook, f"touch {began}; sleep 30; touch {after}")
    wait_for(began)
    started = time.monotonic()
    os.killpg(child.pid, signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert time.monotonic() - started < 10, stdout + stderr
    assert child.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    time.sleep(0.3)
    assert not after.exists()  # the hook's shell went with it
    tasks = json.loads((work / ".agent-loop" / "state.json").read_text())["tasks"]
    assert tasks[0]["status"] == "completed"
    # hooks.log says which hook was stopped, and when, as it says how the others ended.
    log = (work / ".agent-loop" / "hooks.log").read_text()
    assert f"{hook.removeprefix('--')}: touch {began}; sleep 30; touch {after}\n== stopped " \
           "(Ctrl+C) (" in log, log


def test_a_failing_and_a_hanging_hook_change_nothing(tmp_path: Path,
                                                     fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n- two\n")
    go, late = tmp_path / "go", tmp_path / "late"
    began = time.monotonic()
    # The hook's own child must go with it: it is stopped with everything it started. It
    # waits for `go`, given once the run is over: one that slept 2 s touched `late` on a
    # loaded machine that stopped the 1 s hook a second late.
    child = f"(until [ -e {go} ]; do sleep 0.05; done; touch {late})"
    done = agent_loop(work, "--no-distill", "--vcs", "none",
                      "--on-task", f"{child} & sleep 30", "--hook-timeout", "1",
                      "--on-finish", "echo broken >&2; exit 3")
    assert time.monotonic() - began < 20
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert sum("hook on-task timed out after" in line for line in lines) == 2, done.stdout
    assert [line.strip() for line in lines if "hook on-finish" in line] == [
        "hook on-finish failed (exit 3): echo broken >&2; exit 3 (see .agent-loop/hooks.log)"]
    log = (work / ".agent-loop" / "hooks.log").read_text()
    assert "broken" in log and "== exit 3" in log and "timed out after 1s" in log
    state = json.loads((work / ".agent-loop" / "state.json").read_text())
    assert [t["status"] for t in state["tasks"]] == ["completed", "completed"]
    go.touch()
    time.sleep(1.0)  # a child left alive sees `go` and says so
    assert not late.exists()


def test_agent_loop_started_by_a_hook_reads_no_hook_variable_as_a_setting(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n")
    seen = tmp_path / "seen.json"
    again = shlex.join([sys.executable, "-m", "agentloop", "tasks.md", "--show-settings",
                        "--json"])
    done = agent_loop(work, "--no-distill", "--vcs", "none", "--on-finish", f"{again} > {seen}")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(seen.read_text())["settings"]
    assert all(r["origin"]["kind"] == "default" for r in rows), rows


def test_a_run_that_cannot_start_is_failed(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n")
    hook, out = recorder(tmp_path)
    done = agent_loop(work, "--no-distill", "--vcs", "none", "--on-finish", hook,
                      env={**os.environ,
                           "AGENT_LOOP_CLAUDE": str(tmp_path / "no-such-claude")})
    assert done.returncode == 1, done.stdout + done.stderr
    (finish,) = records(out)
    assert (finish["stdin"]["result"], finish["stdin"]["exit_code"]) == ("failed", 1)
    assert "no-such-claude" in finish["stdin"]["reason"]


def test_a_run_that_leaves_a_conflict_is_conflicted(work: Path, tmp_path: Path,
                                                    fake_claude: FakeClaude, monkeypatch) -> None:
    from tests.run.test_parallel import conflict_project

    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    hook, out = recorder(tmp_path)
    done = agent_loop(work, "--no-distill", "--vcs", "git", "--parallel", "2", "--on-finish", hook)
    assert done.returncode == 4, done.stdout + done.stderr
    finish = records(out)[-1]
    assert finish["env"]["AGENT_LOOP_EVENT_RESULT"] == "conflicted"
    assert finish["stdin"]["result"] == "conflicted" and finish["stdin"]["exit_code"] == 4



def test_parallel_lanes_each_hand_their_own_tasks_summary_and_cost(tmp_path: Path,
                                                                   fake_claude: FakeClaude) -> None:
    # Two groups at once: Left's task ends while Right's still runs, and each task's hook
    # call names its own task's words and its own agent's cost, not the other lane's.
    work = git_project(tmp_path, "# Plan\n\n"
                                 "## Left\n- left task\n  FAKE: write left.txt L\n"
                                 "  FAKE: sleep 1\n  FAKE: cost 1.5\n\n"
                                 "## Right\n- right task\n  FAKE: write right.txt R\n"
                                 "  FAKE: sleep 3\n  FAKE: cost 0.25\n")
    hook, out = recorder(tmp_path)
    done = agent_loop(work, "--no-distill", "--vcs", "git", "--parallel", "2",
                      "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    said = {r["stdin"]["task"]["index"]: (
        r["stdin"]["task"].get("group"), r["stdin"]["task"].get("summary"),
        r["stdin"]["task"].get("cost_usd"), r["env"]["AGENT_LOOP_EVENT_TASK_SUMMARY"],
        r["env"]["AGENT_LOOP_EVENT_COST_USD"]) for r in records(out)}
    assert said == {1: ("Left", "left task", 1.5, "left task", "1.5000"),
                    2: ("Right", "right task", 0.25, "right task", "0.2500")}


def test_on_task_s_cost_is_the_task_s_own_with_its_advisor_and_message_writer(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Task 1 fails once ($0.01), its retry advisor says again ($0.001), it lands ($0.01) with
    # its message written ($0.001): $0.022, what --status says it cost, not its agents' $0.02.
    work = git_project(tmp_path, "# Plan\n\n- one\n  FAKE: write one.txt 1\n  FAKE: fail 1\n"
                                 "- two\n  FAKE: write two.txt 2\n")
    hook, out = recorder(tmp_path)
    done = agent_loop(work, "--vcs", "git", "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    said = {r["stdin"]["task"]["index"]: (r["stdin"]["task"]["cost_usd"],
                                          r["env"]["AGENT_LOOP_EVENT_COST_USD"])
            for r in records(out)}
    assert said == {1: (0.022, "0.0220"), 2: (0.011, "0.0110")}, said
    status = agent_loop(work, "--status").stdout
    assert "total: $0.0330 " in status, status


def test_an_agent_run_that_ends_after_its_task_is_not_the_next_task_s_cost(
        tmp_path: Path) -> None:
    # A landing beside the next agent, refused, runs its conflict rounds after its task was
    # said done and the next one began, in the same lane: the run is named by its own task.
    from agentloop.agents import AgentResult
    from agentloop.options.record import RunOptions
    from agentloop.run.events import AgentFinished, TaskFinished, TaskStarted
    from agentloop.run.hooks import Hooks

    hooks = Hooks(None, RunOptions(on_task="true"), print)  # type: ignore[arg-type]
    said: list[float] = []
    hooks._on_task = lambda command, event, began: said.append(began["cost_usd"])
    ok = AgentResult(ok=True, exit_code=0, session_id="s", text="done")
    for event in (TaskStarted(1, 2, "G", "one", 1), AgentFinished(ok, 1.0, 0.5, index=1),
                  TaskFinished(1, "completed", "c1", 1, None), TaskStarted(2, 2, "G", "two", 1),
                  AgentFinished(ok, 1.0, 0.25, index=1), AgentFinished(ok, 1.0, 2.0, index=2),
                  TaskFinished(2, "completed", "c2", 1, None)):
        hooks(event)
    assert said == [0.5, 2.0]


def test_a_conflicted_task_removed_from_the_plan_since_still_makes_the_run_conflicted() -> None:
    # The plan edited while the run worked: the closing count counts the plan as it reads at
    # the end and says the conflicted task apart, by its words (removed_since). Its branch is
    # still left for a person, and the closing line says `conflicted`: so does the hook.
    from agentloop.run.events import RunFinished
    from agentloop.run.hooks import outcome

    left = RunFinished(counts=(("completed", 1),), cost_usd=0.0, seconds=1.0, logs="logs",
                       unfinished=(2,), removed_since=(("two", "conflicted"),))
    assert outcome(left, None) == ("conflicted", 4)
    failed = RunFinished(counts=(("completed", 1),), cost_usd=0.0, seconds=1.0, logs="logs",
                         unfinished=(2,), removed_since=(("two", "failed"),))
    assert outcome(failed, None) == ("failed", 4)
