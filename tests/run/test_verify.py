"""The user's checks in whole runs: the fake claude (and once the real CLI against the fake API),
real git and real jj, the tool started as a user starts it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from agentloop.options.record import RunOptions, usage_problem
from tests.support.claude_cli import agent_loop_env
from tests.support.fake_agent import FakeClaude
from tests.support.fakeapi import FakeApi
from tests.support.repos import git, git_commits, init_repo, jj, jj_changes, state_of
from tests.support.runner import agent_loop, plain_shell  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("plain_shell")

# Passes on the untouched tree; fails once the agent wrote "broken", and its output tells the
# fake agent (in the fix run's prompt) how to fix it.
FIXABLE = ('! grep -q broken a.txt 2>/dev/null || '
           '{ echo "a.txt is broken"; echo "FAKE: write a.txt fixed"; exit 1; }')
FIX_TASK = "## G\n- write a\n  FAKE: write a.txt broken\n"


def events(work: Path) -> list[dict]:
    return [orjson.loads(line) for line in
            (work / ".agent-loop" / "events.jsonl").read_bytes().splitlines()]


def task_files(work: Path, kind: str) -> list[list[str]]:
    if kind == "jj":
        return [files for _, _, files in jj_changes(work)]
    return [files for _, _, files in git_commits(work)]


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_failing_check_is_fixed_in_the_same_session_and_change(
        work: Path, jj_bin: str, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text(FIX_TASK)
    done = agent_loop(work, "--vcs", kind, "--no-distill", "--check", FIXABLE, "--check", "true")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "  baseline checks: 2/2 passed" in out
    assert f"  check failed: {FIXABLE} (exit 1) — fix round 1/2" in out
    assert "  checks: 2/2 passed" in out
    assert (work / "a.txt").read_text() == "fixed\n"
    assert task_files(work, kind) == [["a.txt"]]  # one change, holding the fixed result
    calls = fake_claude.calls()
    developer = [c for c in calls if "--dangerously-skip-permissions" in c["argv"]]
    assert len(developer) == 2
    fix = developer[1]
    assert "--resume" in fix["argv"]
    assert "a.txt is broken" in fix["stdin"] and "exited with code 1" in fix["stdin"]
    assert "fix round 1 of 2" in fix["stdin"]
    assert f"task is done only when each exits 0:\n- `{FIXABLE}`\n- `true`" in developer[0]["stdin"]
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1
    first, second = task["history"]
    assert [c["exit_code"] for c in first["checks"]] == [1, 0]
    assert [(c["round"], c["exit_code"]) for c in second["checks"]] == [(1, 0), (1, 0)]
    assert second["round"] == 1 and second["log"].endswith("-checkfix1.log")
    log = work / first["checks"][0]["log"]
    assert log.name == "001-g--write-a-checks.log" and "a.txt is broken" in log.read_text()
    if kind == "git":
        message = git(work, "log", "-1", "--format=%B")
    else:
        message = jj(work, "log", "--no-graph", "-r", "@-", "-T", "description")
    assert f"Checks passed: {FIXABLE}, true" in message
    kinds = [e["type"] for e in events(work)]
    assert kinds.count("CheckFinished") == 6 and kinds.count("ChecksDone") == 3
    status = agent_loop(work, "--status")
    assert "checks: 2/2 passed" in status.stdout
    as_json = orjson.loads(agent_loop(work, "--status", "--json").stdout)
    assert as_json["tasks"][0]["history"][0]["checks"][0]["command"] == FIXABLE


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_check_never_satisfied_fails_the_task_and_drops_its_change(
        work: Path, jj_bin: str, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text(FIX_TASK)
    never = 'test ! -e a.txt || { echo "still broken: 42 errors"; exit 2; }'
    done = agent_loop(work, "--vcs", kind, "--no-distill", "--check", never,
                      "--check-rounds", "1", "--max-attempts", "2")
    assert done.returncode == 4, done.stderr
    assert f"check failed: {never} (exit 2) — no fix rounds left" in done.stdout
    assert "advisor: retry" in done.stdout
    task = state_of(work)["tasks"][0]
    assert task["status"] == "failed" and task["attempts"] == 2
    assert "still broken: 42 errors" in task["error"] and task["change_id"] is None
    assert task_files(work, kind) == [] and not (work / "a.txt").exists()
    advisor = [c for c in fake_claude.calls() if "json" in c["argv"]]
    assert len(advisor) == 1 and "still broken: 42 errors" in advisor[0]["stdin"]
    developer = [c for c in fake_claude.calls() if "--dangerously-skip-permissions" in c["argv"]]
    assert len(developer) == 4  # two attempts, each a run and one fix run
    assert "--resume" not in developer[2]["argv"]  # the retry starts a fresh session


def test_a_baseline_failure_stops_before_any_agent_runs(work: Path,
                                                        fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(FIX_TASK)
    done = agent_loop(work, "--vcs", "git", "--check", "true",
                      "--check", "echo 'E   assert 1 == 2'; exit 3")
    assert done.returncode == 1
    assert "check `echo 'E   assert 1 == 2'; exit 3` fails before any task ran (exit 3)" \
        in done.stderr
    assert "E   assert 1 == 2" in done.stderr and "checks-baseline.log" in done.stderr
    assert fake_claude.calls() == []
    task = state_of(work)["tasks"][0]
    assert task["status"] == "pending" and task["attempts"] == 0


def test_a_hanging_check_is_stopped_at_its_timeout_with_its_group(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(FIX_TASK)
    pid = work.parent / "bg.pid"
    hang = f"test ! -e a.txt || {{ sleep 1000 & echo $! > {pid}; wait; }}"
    began = time.monotonic()
    done = agent_loop(work, "--vcs", "git", "--check", hang, "--check-timeout", "1",
                      "--check-rounds", "0", "--max-attempts", "1")
    assert time.monotonic() - began < 60
    assert done.returncode == 4, done.stderr
    assert "(timed out) — no fix rounds left" in done.stdout
    task = state_of(work)["tasks"][0]
    assert task["status"] == "failed" and "timed out" in task["error"]
    assert task["history"][0]["checks"][0]["timed_out"] is True
    background = int(pid.read_text())
    assert not Path(f"/proc/{background}").exists() or \
        Path(f"/proc/{background}/stat").read_text().split(")")[1].split()[0] == "Z"


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_ctrl_c_during_a_check_exits_130_and_resumes_cleanly(
        work: Path, jj_bin: str, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text(FIX_TASK)
    mark = work.parent / "in-check"
    # Hangs the first time it meets the task's work, passes ever after.
    once = f"test ! -e a.txt || test -e {mark} || {{ touch {mark}; sleep 1000; }}"
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", kind,
                             "--no-distill", "--check", once], cwd=work, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "SHELL": "/bin/sh"})
    deadline = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    tool.send_signal(signal.SIGINT)
    _, err = tool.communicate(timeout=60)
    assert tool.returncode == 130, err
    task = state_of(work)["tasks"][0]
    assert task["status"] == "interrupted" and task["attempts"] == 0
    assert task["change_id"] is None and not (work / "a.txt").exists()
    done = agent_loop(work, "--vcs", kind, "--no-distill", "--check", once)
    assert done.returncode == 0, done.stderr
    assert state_of(work)["tasks"][0]["status"] == "completed"
    assert task_files(work, kind) == [["a.txt"]]


def test_require_changes_fails_a_task_that_changed_nothing(work: Path,
                                                           fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- look around\n- write b\n  FAKE: write b.txt b\n")
    plain = agent_loop(work, "--vcs", "git", "--no-distill")
    assert plain.returncode == 0, plain.stderr
    assert "completed, but the task changed no files" in plain.stdout
    assert "look at: task 1 completed but changed no files" in plain.stdout
    assert "task 2 completed but changed" not in plain.stdout
    assert "(empty)" in agent_loop(work, "--status").stdout
    assert orjson.loads(agent_loop(work, "--status", "--json").stdout)["tasks"][0]["empty"]
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--require-changes", "--task", "1",
                       "--again", "--max-attempts", "1")
    assert again.returncode == 4, again.stderr
    task = state_of(work)["tasks"][0]
    assert task["status"] == "failed" and "changed no files" in task["error"]


def test_require_changes_needs_version_control() -> None:
    problem = usage_problem(RunOptions(require_changes=True, vcs="none"))
    assert problem is not None and "--require-changes needs version control" in problem


def test_an_empty_check_is_a_usage_error(work: Path) -> None:
    (work / "tasks.md").write_text("- one\n")
    done = agent_loop(work, "--check", "true", "--check", "  ")
    assert done.returncode == 2 and "--check needs a command line" in done.stderr
    assert not (work / ".agent-loop").exists()


def test_dry_run_shows_the_checks_of_each_task(work: Path) -> None:
    (work / "tasks.md").write_text("- [ ] one\n- [x] done already\n")
    plan = agent_loop(work, "--dry-run", "--check", "pytest -q", "--check", "ruff check .")
    assert plan.returncode == 0, plan.stderr
    assert "[1/2] (ungrouped) > one  (starts a fresh session)\n    checks: pytest -q, ruff " \
           "check ." in plan.stdout
    assert plan.stdout.count("checks:") == 1  # a task that does not run has none to show
    rows = orjson.loads(agent_loop(work, "--dry-run", "--json", "--check", "true").stdout)
    assert rows["tasks"][0]["checks"] == ["true"]


def test_the_reviewer_sees_the_check_results(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- write b\n  FAKE: write b.txt b\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", "--check", "true")
    assert done.returncode == 0, done.stderr
    reviewer = [c for c in fake_claude.calls() if "--permission-mode" in c["argv"]]
    assert len(reviewer) == 1
    assert "The project's checks ran on this change" in reviewer[0]["stdin"]
    assert "- `true`: passed (exit 0" in reviewer[0]["stdin"]


def test_a_review_fix_is_held_to_the_checks_too(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        "- write a\n  FAKE: write a.txt good\n"
        "  FAKE: review FEEDBACK: say it louder\\nFAKE: write a.txt broken\n"
        "  FAKE: review APPROVED\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", "--check", FIXABLE)
    assert done.returncode == 0, done.stderr
    assert (work / "a.txt").read_text() == "fixed\n"
    kinds = []
    for call in fake_claude.calls():
        if "--permission-mode" in call["argv"]:
            kinds.append("review")
        elif "did not approve it yet" in call["stdin"]:
            kinds.append("review fix")
        elif "checks ran on your changes" in call["stdin"]:
            kinds.append("check fix")
        else:
            kinds.append("develop")
    assert kinds == ["develop", "review", "review fix", "check fix", "review"]
    assert "- `" + FIXABLE + "`: passed" in fake_claude.calls()[-1]["stdin"]
    assert [files for _, _, files in git_commits(work)] == [["a.txt"]]


def test_fixed_after_a_failing_check_with_the_real_cli(work: Path, tmp_path: Path,
                                                       fake_api: FakeApi,
                                                       claude_bin: Path) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("## G\n- WRITE a.txt: broken\n")
    check = ('! grep -q broken a.txt 2>/dev/null || '
             '{ echo "a.txt is broken"; echo "WRITE a.txt: fixed"; exit 1; }')
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--check", check, env=env,
                      timeout=180)
    assert done.returncode == 0, done.stderr
    assert "fix round 1/2" in done.stdout and "checks: 1/1 passed" in done.stdout
    assert (work / "a.txt").read_text() == "fixed\n"
    assert [files for _, _, files in git_commits(work)] == [["a.txt"]]
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed"
    assert [a["resumed"] for a in task["history"]] == [False, True]
    fix_prompts = [r for r in fake_api.requests_for_messages()
                   if "a.txt is broken" in str(r.body)]
    assert fix_prompts  # the check's output reached the model in the resumed session


# -- in-process: the core with a scripted agent ---------------------------------------------------

PLAN_WITH_CHECKS = """\
# Plan
```agent-loop-checks
# every task
true
```

## A
- a1

## B
```agent-loop-checks
echo group B
```
- b1
- b2
"""


def test_plan_checks_apply_to_their_group_only(tmp_path: Path) -> None:
    from agentloop.run.events import CheckStarted, Event
    from agentloop.run.verify import task_checks
    from agentloop.vcs.none import NoneVcs
    from tests.support.harness import OK, RETRY, FakeClock, ScriptedAdvisor, ScriptedAgent, make_run

    seen: list[Event] = []
    runner = make_run(tmp_path, PLAN_WITH_CHECKS, ScriptedAgent([OK]), NoneVcs(),
                      ScriptedAdvisor(RETRY), FakeClock(), seen)
    assert [t.task for t in runner.state.tasks] == ["a1", "b1", "b2"]  # no check is a task
    assert task_checks(runner.ctx.options, runner.state.tasks[0]) == ("true",)
    assert task_checks(runner.ctx.options, runner.state.tasks[1]) == ("true", "echo group B")
    runner.run()
    ran = [(e.index, e.command) for e in seen if isinstance(e, CheckStarted)]
    assert ran == [(0, "true"), (0, "echo group B"), (1, "true"), (2, "true"),
                   (2, "echo group B"), (3, "true"), (3, "echo group B")]
    assert [t.status for t in runner.state.tasks] == ["completed"] * 3


def test_a_plan_check_that_fails_is_fixed_like_a_cli_check(work: Path,
                                                          fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text(f"```agent-loop-checks\n{FIXABLE}\n```\n" + FIX_TASK)
    done = agent_loop(work, "--vcs", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "a.txt").read_text() == "fixed\n"
    assert state_of(work)["tasks"][0]["checks"] == [FIXABLE]


def test_with_iterations_checks_run_after_task_complete_only(tmp_path: Path) -> None:
    from agentloop.agents import AgentResult
    from agentloop.run.events import CheckStarted, Event, TaskStarted
    from agentloop.vcs.none import NoneVcs
    from tests.support.harness import RETRY, FakeClock, ScriptedAdvisor, ScriptedAgent, make_run

    said = [AgentResult(ok=True, exit_code=0, session_id="s1", text="Progress: half"),
            AgentResult(ok=True, exit_code=0, session_id="s1", text="Progress: all\nTASK_COMPLETE")]
    seen: list[Event] = []
    runner = make_run(tmp_path, "- long task\n", ScriptedAgent(said), NoneVcs(),
                      ScriptedAdvisor(RETRY), FakeClock(), seen, check=("true",), iterations=3)
    runner.run()
    order = [type(e).__name__ for e in seen if isinstance(e, (CheckStarted, TaskStarted))]
    assert order == ["CheckStarted", "TaskStarted", "TaskStarted", "CheckStarted"]
    assert runner.state.tasks[0].status == "completed"


def test_check_events_round_trip_and_read_as_console_lines() -> None:
    from agentloop.console.live import Console
    from agentloop.run.events import CheckFinished, ChecksDone, CheckStarted, from_json, to_json

    events = [CheckStarted(1, "pytest -q", 0, "/p/.agent-loop/logs/x-checks.log"),
              CheckFinished(1, "pytest -q", 1, 2.5, ".agent-loop/logs/x-checks.log", 0, False),
              ChecksDone(1, 0, 2, 2, 2.6, ("pytest -q (exit 1)",)),
              ChecksDone(1, 1, 2, 2, 14.2),
              ChecksDone(0, 0, 0, 1, 0.1, ("false (exit 1)",))]
    for event in events:
        assert from_json(to_json(event, "2026-01-01T00:00:00+00:00")) == event
    import io

    out = io.StringIO()
    console = Console(out, live=False, cwd=Path("/p"))
    for event in events:
        console(event)
    assert out.getvalue().splitlines() == [
        "  check: pytest -q … (output -> .agent-loop/logs/x-checks.log)",
        "  check failed: pytest -q (exit 1) — fix round 1/2",
        "  checks: 2/2 passed (14.2s)",
        "  baseline check failed: false (exit 1) — the run stops before any task"]
