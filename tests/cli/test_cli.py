"""Each CLI mode through click's CliRunner, user errors as one line, and the installed program."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from tests.support.fake_agent import FakeClaude
from tests.support.runner import invoke

TASKS = ("# Plan\n\n- [ ] early task\n\n## Build\n- [x] done already\n- [ ] compile it\n"
         "1. [ ] numbered one\n")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "tasks.md").write_text(TASKS)
    monkeypatch.chdir(folder)
    return folder


def test_dry_run_shows_every_decision_and_writes_nothing(work: Path) -> None:
    code, out, _ = invoke("tasks.md", "--dry-run")
    assert code == 0
    assert "[1/4] (ungrouped) > early task  (starts a fresh session)" in out
    assert "[2/4] Build > done already  (not run: checked off in the task file)" in out
    assert "[3/4] Build > compile it  (starts a fresh session)" in out
    assert "[4/4] Build > numbered one  (continues the group's session)" in out
    assert "rules:" in out and "every top-level item is" in out
    assert not (work / ".agent-loop").exists()


def test_dry_run_after_a_run_marks_done_tasks(work: Path, fake_claude: FakeClaude) -> None:
    invoke("tasks.md", "--vcs", "none")
    code, out, _ = invoke("tasks.md", "--dry-run")
    assert "[1/4] (ungrouped) > early task  (not run: done)" in out


def test_status_before_and_after_a_run(work: Path, fake_claude: FakeClaude) -> None:
    code, out, _ = invoke("tasks.md", "--status")
    assert code == 0 and "no run yet" in out and "3 pending" in out
    assert not (work / ".agent-loop").exists()
    invoke("tasks.md", "--vcs", "none")
    code, out, _ = invoke("tasks.md", "--status")
    assert "3 completed, 1 skipped" in out
    assert ".agent-loop/logs/001-ungrouped--early-task.log" in out
    code, out, _ = invoke("tasks.md", "--status", "--json")
    data = orjson.loads(out)
    assert data["counts"] == {"completed": 3, "skipped": 1}
    assert data["tasks"][0]["log"] == ".agent-loop/logs/001-ungrouped--early-task.log"
    assert data["cost_usd"] == pytest.approx(0.03)


def test_plain_run_then_rerun_runs_nothing_twice(work: Path, fake_claude: FakeClaude) -> None:
    code, out, _ = invoke("tasks.md", "--vcs", "none")
    assert code == 0
    # The counter counts what this run takes (3 of the plan's 4), the task's number beside it.
    assert "agent-loop: 3 of 4 task(s) to run, 1 done already (vcs: none" in out
    assert "\n[1/3] task 1: (ungrouped) > early task\n" in out
    assert "\n[3/3] task 4: Build > numbered one\n" in out and "/4]" not in out
    assert "3 completed, 1 skipped" in out
    code, out, _ = invoke("tasks.md", "--vcs", "none")
    assert code == 0 and "0 of 4 task(s) to run, 4 done already (vcs" in out
    assert len(fake_claude.calls()) == 3


def test_a_changed_task_file_is_reconciled_and_reset_still_starts_over(
        work: Path, fake_claude: FakeClaude) -> None:
    invoke("tasks.md", "--vcs", "none")
    before = (work / ".agent-loop" / "state.json").read_bytes()
    (work / "tasks.md").write_text(TASKS.replace("compile it", "compile it well")
                                   + "- [ ] new one\n")
    code, out, err = invoke("tasks.md", "--vcs", "none")
    assert code == 0, err
    # The finished task reworded stays done (its words changed, its work did not go).
    assert ("tasks.md changed: 1 task added, 0 edited, 0 removed, 1 reworded after done; 3 "
            "completed tasks kept") in out
    runs = [p.splitlines()[-1] for p in fake_claude.task_prompts()]
    assert runs[-2:] == ["numbered one", "new one"]
    code, out, _ = invoke("tasks.md", "--vcs", "none", "--reset")
    assert code == 0 and "reset: the old state and logs are in .agent-loop/archive/" in out
    archived = [p for p in (work / ".agent-loop" / "archive").iterdir() if p.is_dir()]
    assert len(archived) == 1 and (archived[0] / "state.json").read_bytes() != before
    assert (archived[0] / "logs").is_dir()


def test_a_second_plan_keeps_its_own_state(work: Path, fake_claude: FakeClaude) -> None:
    invoke("tasks.md", "--vcs", "none")
    first = (work / ".agent-loop" / "state.json").read_bytes()
    (work / "other.md").write_text("- x\n")
    code, out, err = invoke("other.md", "--vcs", "none")
    assert code == 0, err
    assert (work / ".agent-loop" / "state.json").read_bytes() == first
    (folder,) = (work / ".agent-loop" / "plans").iterdir()
    assert folder.name.startswith("other-md-") and (folder / "state.json").exists()
    code, out, _ = invoke("other.md", "--status")
    assert "other.md: 1 task(s): 1 completed" in out
    code, out, _ = invoke("tasks.md", "--status")
    assert "tasks.md: 4 task(s)" in out


@pytest.mark.parametrize("setup, words", [
    (lambda w: None, "does not exist"),
    (lambda w: (w / "missing.md").mkdir(), "is a directory"),
    (lambda w: (w / "missing.md").write_bytes(b"- caf\xe9\n"), "is not UTF-8"),
    (lambda w: (w / "missing.md").write_text("# nothing here\n"), "has no tasks"),
])
def test_task_file_errors_are_one_line_exit_1(work: Path, setup, words: str) -> None:  # type: ignore[no-untyped-def]
    setup(work)
    for mode in ([], ["--dry-run"], ["--status"]):
        code, out, err = invoke("missing.md", "--vcs", "none", *mode)
        assert code == 1, (mode, out, err)
        assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_claude_is_one_line(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    code, _, err = invoke("tasks.md", "--vcs", "none")
    assert code == 1 and "claude not found" in err and err.count("\n") == 1


def test_damaged_state_is_one_line_and_kept(work: Path, fake_claude: FakeClaude) -> None:
    (work / ".agent-loop").mkdir()
    (work / ".agent-loop" / "state.json").write_text("{not json")
    for mode in ([], ["--status"], ["--dry-run"]):
        code, _, err = invoke("tasks.md", "--vcs", "none", *mode)
        assert code == 1 and "not valid JSON" in err and "--reset" in err
    assert (work / ".agent-loop" / "state.json").read_text() == "{not json"


def test_version_and_help() -> None:
    assert "agent-loop, version" in invoke("--version")[1]
    code, out, _ = invoke("--help")
    assert code == 0 and "--dry-run" in out and "--status" in out and "--reset" in out


def installed() -> str:
    found = shutil.which("agent-loop", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("agent-loop is not installed beside this python: pip install -e .")
    return found


def test_installed_program_runs_as_a_real_process(work: Path, fake_claude: FakeClaude) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run([installed(), "tasks.md", "--vcs", "none"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "3 completed, 1 skipped" in done.stdout
    bad = subprocess.run([installed(), "nope.md"], cwd=work, capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.startswith("agent-loop: error:")
    usage = subprocess.run([installed(), "--bogus"], cwd=work, capture_output=True, text=True)
    assert usage.returncode == 2


def test_a_second_run_is_refused_while_one_runs(work: Path, fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("- FAKE: sleep 30\n")
    first = subprocess.Popen([installed(), "tasks.md", "--vcs", "none"], cwd=work,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not fake_claude.calls() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess.run([installed(), "tasks.md", "--vcs", "none"], cwd=work,
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 1
        assert f"(pid {first.pid}: agent-loop tasks.md" in second.stderr
        status = subprocess.run([installed(), "tasks.md", "--status"], cwd=work,
                                capture_output=True, text=True, timeout=30)
        assert status.returncode == 0 and "1 running" in status.stdout
        # --dry-run said nothing of the run beside it: the plan read as if none went on.
        dry = subprocess.run([installed(), "tasks.md", "--dry-run", "--vcs", "none"], cwd=work,
                             capture_output=True, text=True, timeout=30)
        said = dry.stdout + dry.stderr
        assert dry.returncode == 0, said
        assert f"a run (pid {first.pid}) is working on tasks.md now, on task 1 (" in said, said
    finally:
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=30)
    assert first.returncode == 130
    # Stopped before its agent reported: its cost is not known ("cost unknown (tokens only);
    # tokens in 0 out 0" read as tokens counted), and not left unsaid either (as if nothing
    # was spent: the agent ran).
    closing = next(line for line in out.splitlines() if line.startswith("agent-loop stopped:"))
    assert "; cost unknown (no agent reported);" in closing, out + err
    assert "tokens" not in closing, out + err
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    assert state["tasks"][0]["status"] == "interrupted"
    # --status too, as the closing line: its header, receipts and the overview said "cost
    # unknown (tokens only)" with 0 tokens.
    _status_says_its_cost_is_unknown(work)


def test_status_after_a_kill_mid_agent_says_its_cost_is_unknown(work: Path,
                                                                 fake_claude: FakeClaude) -> None:
    """A kill -9 while the agent worked (it had said something) leaves its run open with no
    cost reported: --status said "cost $0.0000" of it, where the next run says "or more"."""
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt one\n  FAKE: sleep 30\n")
    first = _run_in_background(work, "tasks.md", "--vcs", "none")
    stream = work / ".agent-loop" / "logs" / "001-tasks--one.jsonl"
    try:
        _wait_for(lambda: any(p.stat().st_size for p in stream.parent.glob("*.jsonl"))
                  if stream.parent.exists() else False)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=60)
    _status_says_its_cost_is_unknown(work)
    listed = subprocess.run([installed(), "tasks.md", "--status"], cwd=work,
                           capture_output=True, text=True, timeout=30)
    assert "   1 interrupted 1 run(s)  -              unknown  " in listed.stdout, listed.stdout


def _status_says_its_cost_is_unknown(work: Path) -> None:
    """--status, of the plan and of every plan, says the cost of a run whose agent reported
    none is unknown: not $0, not "tokens only" with no token counted."""
    for args in (["tasks.md", "--status"], ["--status"]):
        status = subprocess.run([installed(), *args], cwd=work, capture_output=True,
                                text=True, timeout=30)
        assert status.returncode == 0, status.stderr
        assert "; cost unknown (no agent reported);" in status.stdout, status.stdout
        assert "tokens only" not in status.stdout, status.stdout
        assert "$0.0000" not in status.stdout, status.stdout


def _run_in_background(work: Path, *args: str) -> subprocess.Popen[str]:
    """`agent-loop ARGS` started in `work` in a session of its own (its agents with it)."""
    return subprocess.Popen([sys.executable, "-m", "agentloop", *args], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1"}, start_new_session=True)


def _dry_run(work: Path, plan: str = "tasks.md") -> str:
    dry = subprocess.run([sys.executable, "-m", "agentloop", plan, "--dry-run", "--vcs", "none"],
                         cwd=work, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    return dry.stdout + dry.stderr


def _wait_for(found: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not found():
        assert time.monotonic() < deadline, "waited a minute"
        time.sleep(0.05)


def test_dry_run_between_two_tasks_of_a_run_says_the_run_works_on_this_plan(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    """Between tasks (task one done, its on-task hook running) --dry-run said "a run is working
    in this repository now (between tasks, or on another plan): this plan runs once it ends"
    of a run of this very plan. The plan's own lock tells: "working on tasks.md now, between
    its tasks"."""
    hooked = tmp_path / "hooked"
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt one\n- two\n"
                                   "  FAKE: write two.txt two\n")
    first = _run_in_background(work, "tasks.md", "--vcs", "none",
                               "--on-task", f"touch {hooked} && sleep 30")
    try:
        _wait_for(hooked.exists)
        said = _dry_run(work)
        assert f"a run (pid {first.pid}) is working on tasks.md now, between its tasks: " in said, \
            said
        assert "another plan" not in said and "runs once it ends" not in said, said
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.communicate(timeout=60)


def test_dry_run_beside_a_run_of_another_plan_says_so(work: Path,
                                                      fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt one\n")
    (work / "other.md").write_text("- slow\n  FAKE: sleep 30\n")
    first = _run_in_background(work, "other.md", "--vcs", "none")
    try:
        _wait_for(lambda: bool(fake_claude.calls()))
        said = _dry_run(work)
        assert f"a run (pid {first.pid}) is working on another plan in this repository now: " \
            "this plan runs once it ends" in said, said
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.communicate(timeout=60)


def test_dry_run_after_a_killed_run_whose_pid_lives_again_says_no_run_works(
        work: Path, fake_claude: FakeClaude) -> None:
    """A run killed with SIGKILL mid-task leaves its task `running` and its pid file; once
    that pid names a live process again (reused), --dry-run said "a run (pid N) is working on
    tasks.md now, on task 1". No run holds the lock: nothing is said."""
    (work / "tasks.md").write_text("- slow\n  FAKE: sleep 30\n")
    first = _run_in_background(work, "tasks.md", "--vcs", "none")
    _wait_for(lambda: bool(fake_claude.calls()))
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    (work / ".agent-loop" / "run.pid").write_text(f"{os.getpid()}\n")   # a live process
    said = _dry_run(work)
    assert "a run (pid" not in said, said


def test_status_after_the_task_file_changed_warns_and_still_shows(work: Path,
                                                                   fake_claude: FakeClaude) -> None:
    invoke("tasks.md", "--vcs", "none")
    (work / "tasks.md").write_text(TASKS + "- [ ] one more\n")
    code, out, _ = invoke("tasks.md", "--status")
    assert code == 0
    assert out.startswith("tasks.md changed since the last run: 1 task added, 0 edited, "
                          "0 removed; 3 completed tasks kept")
    assert "3 completed, 1 skipped, 1 pending" in out


def test_reset_with_an_unusable_task_file_archives_nothing(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          fake_claude: FakeClaude) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text("- one\n")
    assert invoke("tasks.md", "--vcs", "none")[0] == 0
    before = (tmp_path / ".agent-loop" / "state.json").read_bytes()
    (tmp_path / "tasks.md").write_text("no tasks here\n")
    code, _, err = invoke("tasks.md", "--reset", "--vcs", "none")
    assert code == 1 and "has no tasks" in err
    assert (tmp_path / ".agent-loop" / "state.json").read_bytes() == before
    assert not (tmp_path / ".agent-loop" / "archive").exists()


def test_a_stop_python_wrapped_in_another_error_still_ends_as_a_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Measured in CI's signal campaign: a SIGHUP inside a dataclass built by a module imported
    # late (marko's) became `RuntimeError: Error calling __set_name__ ...`, an internal error.
    from agentloop.console import command as doors

    def wrapped(*args: object) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from exc

    monkeypatch.setattr(doors, "dispatch", wrapped)
    (tmp_path / "tasks.md").write_text("- a\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(command, ["tasks.md"])
    assert done.exit_code == 130
    assert "interrupted; state saved. Resume with: agent-loop tasks.md" in done.output


@pytest.mark.parametrize("look", [["--status", "--follow"], ["--dry-run"]])
def test_a_ctrl_c_that_ends_a_look_says_nothing_of_a_state_or_a_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, look: list[str]) -> None:
    # `--status --follow` ends with Ctrl+C: it saved nothing and there is nothing to resume.
    from agentloop.console import command as doors

    def stopped(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(doors, "dispatch", stopped)
    (tmp_path / "tasks.md").write_text("- a\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(command, ["tasks.md", *look])
    assert done.exit_code == 130
    assert "agent-loop: interrupted" in done.output
    assert "state saved" not in done.output and "Resume" not in done.output


def test_reset_in_a_terminal_asks_before_it_redoes_done_tasks(
        work: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 23 bug 2: --reset read as "clear the state" and at once paid for every task again.
    assert invoke("tasks.md", "--vcs", "none")[0] == 0
    state = (work / ".agent-loop" / "state.json").read_bytes()
    code, out, _ = invoke("tasks.md", "--vcs", "none", "--reset", "--dry-run")
    assert code == 0 and out.count("starts a fresh session") == 2
    assert "[1/4] (ungrouped) > early task  (starts a fresh session)" in out
    assert (work / ".agent-loop" / "state.json").read_bytes() == state
    monkeypatch.setattr("agentloop.console.confirm.interactive", lambda: True)
    result = CliRunner().invoke(command, ["tasks.md", "--vcs", "none", "--reset"], input="\n")
    assert "3 done task(s) will be done again by the agent, and paid for again. Go on? [y/N]" \
        in result.stderr
    assert result.exit_code == 1 and "nothing was changed" in result.stderr
    assert (work / ".agent-loop" / "state.json").read_bytes() == state
    assert not (work / ".agent-loop" / "archive").exists() and len(fake_claude.calls()) == 3
    result = CliRunner().invoke(command, ["tasks.md", "--vcs", "none", "--reset"], input="y\n")
    assert result.exit_code == 0 and len(fake_claude.calls()) == 6
    code, out, _ = invoke("tasks.md", "--vcs", "none", "--reset", "--yes")
    assert code == 0 and len(fake_claude.calls()) == 9
    monkeypatch.setattr("agentloop.console.confirm.interactive", lambda: False)  # CI: no one to ask
    code, out, _ = invoke("tasks.md", "--vcs", "none", "--reset")
    assert code == 0 and len(fake_claude.calls()) == 12


def test_reset_says_plainly_that_it_runs_the_plan_again() -> None:
    out = CliRunner().invoke(command, ["--help"]).stdout
    assert "run the whole plan again" in " ".join(out.split())
    code, _, err = invoke("tasks.md", "--yes")
    assert code == 2 and "--yes goes with --reset" in err


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc), children first."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [pid]
    while queue:
        for child in parents.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def until(path: Path) -> str:
    """A shell loop that waits for `path` (60 s at most)."""
    return f"for i in $(seq 1200); do [ -e {path} ] && break; sleep 0.05; done"


def _signal(pid: int, sig: signal.Signals) -> None:
    """`sig` to `pid`, unless it has ended since it was listed (a `sleep` of `until`'s loop)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _stopped_for(seconds: float, group: list[int], go: Path) -> None:
    """`group` stopped (SIGSTOP) for `seconds`, as a laptop's sleep stops it, then continued
    and its agent let end (`go`): whatever ends the wait (a failure, a Ctrl+C of pytest), no
    stopped process is left behind."""
    try:
        for pid in group:
            _signal(pid, signal.SIGSTOP)
        time.sleep(seconds)
    finally:
        for pid in reversed(group):
            _signal(pid, signal.SIGCONT)
        go.touch()


def test_a_run_stopped_longer_than_the_task_timeout_goes_on(
        work: Path, fake_claude: FakeClaude) -> None:
    # Issue 23: a laptop that sleeps. The whole run (agent-loop, its agent, the agent's group)
    # is stopped for longer than --task-timeout, then continued: the pause is nobody's work,
    # so the agent is not timed out and no attempt is burned.
    # The agent works until the test lets it end, after the stop: one that slept 2.5 s ended
    # during a stop that a loaded machine began late. The stop (4.5 s) is longer than the
    # timeout (4 s), which leaves the stop 4 s to begin.
    go = work.parent / "go"
    (work / "tasks.md").write_text(f"- slow one\n  FAKE: bash {until(go)}\n")
    env = {**os.environ, "NO_COLOR": "1"}
    tool = subprocess.Popen([installed(), "tasks.md", "--vcs", "none", "--task-timeout", "4",
                             "--max-attempts", "1"], cwd=work, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    while not fake_claude.calls() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_claude.calls(), "the agent never started"
    group = [tool.pid, *_descendants(tool.pid)]
    _stopped_for(4.5, group, go)
    out, err = tool.communicate(timeout=60)
    assert tool.returncode == 0, out + err
    assert "1 completed" in out and "timed out" not in out
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    assert state["tasks"][0]["attempts"] == 1


def test_a_failure_after_the_run_was_stopped_is_no_attempt(
        work: Path, fake_claude: FakeClaude) -> None:
    # What a long pause breaks (a dropped connection, here a failed run) is not the task's
    # fault: the run goes on and the task keeps its one attempt. The agent fails once the test
    # lets it, after the stop: one that slept 1 s failed before a loaded machine's late stop.
    go = work.parent / "go"
    (work / "tasks.md").write_text(f"- flaky after a nap\n  FAKE: bash {until(go)}\n"
                                   "  FAKE: fail 1\n")
    env = {**os.environ, "NO_COLOR": "1"}
    tool = subprocess.Popen([installed(), "tasks.md", "--vcs", "none", "--max-attempts", "1"],
                            cwd=work, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not fake_claude.calls() and time.monotonic() < deadline:
        time.sleep(0.05)
    group = [tool.pid, *_descendants(tool.pid)]
    _stopped_for(3, group, go)
    out, err = tool.communicate(timeout=60)
    assert tool.returncode == 0, out + err
    assert "while the agent worked, and the run failed after it" in out
    task = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1
    assert [a["outcome"] for a in task["history"]] == ["paused", "completed"]


def test_reset_asks_on_a_real_terminal(work: Path, fake_claude: FakeClaude) -> None:
    # The question needs stdin to be a terminal: a pseudo-terminal, answered with Enter (no).
    assert invoke("tasks.md", "--vcs", "none")[0] == 0
    main, terminal = os.openpty()
    try:
        tool = subprocess.Popen([installed(), "tasks.md", "--vcs", "none", "--reset"], cwd=work,
                                stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "NO_COLOR": "1"})
        os.write(main, b"\n")
        out, err = tool.communicate(timeout=60)
    finally:
        os.close(main)
        os.close(terminal)
    assert tool.returncode == 1, out + err
    assert "Go on? [y/N]" in err and "nothing was changed" in err
    assert len(fake_claude.calls()) == 3
