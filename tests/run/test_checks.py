"""The user's checks, run as real processes through a real shell."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from agentloop.errors import AgentLoopError, CheckFailed, Interrupted
from agentloop.run import checks
from agentloop.run.checks import CheckRun


@pytest.fixture(autouse=True)
def plain_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "/bin/sh")


def run(tmp_path: Path, *commands: str, timeout: float | None = 30,
        round_: int = 0) -> tuple[CheckRun, ...]:
    return checks.run_checks(commands, tmp_path, tmp_path / "logs" / "task.checks.log",
                             timeout, round_)


def gone(pid: int, within: float = 5.0) -> bool:
    """The process has ended (a zombie waiting for init to reap it counts as ended)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_passing_and_failing_checks_all_run(tmp_path: Path) -> None:
    runs = run(tmp_path, "echo fine", "echo broken; exit 3", "true", round_=1)
    assert [r.passed for r in runs] == [True, False, True]
    assert [r.exit_code for r in runs] == [0, 3, 0]
    assert runs[1].tail == "broken\n"
    assert all(r.round == 1 and not r.timed_out and r.seconds >= 0 for r in runs)
    log = (tmp_path / "logs" / "task.checks.log").read_text()
    assert runs[0].log == str(tmp_path / "logs" / "task.checks.log")
    assert "$ echo fine\nfine\n" in log and "$ echo broken; exit 3\nbroken\n[exit 3" in log


def test_log_is_appended_across_rounds(tmp_path: Path) -> None:
    run(tmp_path, "echo first")
    run(tmp_path, "echo second", round_=1)
    log = (tmp_path / "logs" / "task.checks.log").read_text()
    assert log.index("first") < log.index("second")


def test_the_shell_line_runs_as_typed_in_the_root(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("b\na\nc\n")
    runs = run(tmp_path, "sort data.txt | head -n 1 && X=42 && echo \"x=$X\" && pwd",
               "false && echo never")
    assert runs[0].passed and runs[0].tail == f"a\nx=42\n{tmp_path}\n"
    assert not runs[1].passed and "never" not in runs[1].tail


def test_environment_reaches_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHECK_VAR", "from the environment")
    assert run(tmp_path, 'test "$CHECK_VAR" = "from the environment"')[0].passed


def test_stderr_goes_to_the_same_log(tmp_path: Path) -> None:
    runs = run(tmp_path, "echo out; echo err >&2; exit 1")
    assert runs[0].tail == "out\nerr\n"
    assert "out\nerr\n" in (tmp_path / "logs" / "task.checks.log").read_text()


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_the_users_shell_runs_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "/bin/bash")
    runs = run(tmp_path, '[[ -n "$BASH_VERSION" ]] && echo bash; echo err >&2')
    assert runs[0].passed and runs[0].tail == "bash\nerr\n"


def test_an_unusable_shell_falls_back_to_sh(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("/no/such/shell", "", "bash"):
        monkeypatch.setenv("SHELL", value)
        assert checks.user_shell() == "/bin/sh"
        assert run(tmp_path, "echo ok")[0].passed


def test_a_missing_program_is_a_failed_check(tmp_path: Path) -> None:
    runs = run(tmp_path, "no-such-program-here --flag")
    assert runs[0].exit_code == 127 and not runs[0].passed
    assert "no-such-program-here" in runs[0].tail


def test_megabytes_of_output_stay_out_of_memory(tmp_path: Path) -> None:
    # 20 MB in 200,000 lines, then a last line; the log holds all of it, memory a bounded tail.
    command = ("yes 0123456789012345678901234567890123456789012345678901234567890123456789"
               "012345678901234567890123456789 | head -n 200000; echo the end")
    tracemalloc.start()
    try:
        runs = run(tmp_path, command)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert runs[0].passed
    assert peak < 2_000_000
    assert len(runs[0].tail.encode()) <= checks.TAIL_BYTES
    assert runs[0].tail.endswith("789\nthe end\n")
    assert (tmp_path / "logs" / "task.checks.log").stat().st_size > 20_000_000


def test_one_endless_line_keeps_a_bounded_tail(tmp_path: Path) -> None:
    runs = run(tmp_path, "head -c 3000000 /dev/zero | tr '\\0' a; exit 1")
    assert not runs[0].passed
    assert runs[0].tail == "a" * checks.TAIL_BYTES


def test_the_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    runs = run(tmp_path, "seq 1 1000")
    lines = runs[0].tail.splitlines()
    assert len(lines) == checks.TAIL_LINES and lines[-1] == "1000"


def test_binary_and_nul_output_does_not_crash(tmp_path: Path) -> None:
    runs = run(tmp_path, "printf 'a\\000b\\377\\376c\\n'; exit 2")
    assert runs[0].exit_code == 2
    assert "\x00" not in runs[0].tail and runs[0].tail.startswith("a\ufffdb")
    assert b"a\x00b\xff\xfec\n" in (tmp_path / "logs" / "task.checks.log").read_bytes()


def test_a_hanging_check_is_stopped_with_its_whole_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    began = time.monotonic()
    runs = run(tmp_path, f"echo started; sleep 1000 & echo $! > {pids}; wait", timeout=1)
    assert time.monotonic() - began < 15
    check = runs[0]
    assert check.timed_out and not check.passed
    assert "started" in check.tail and "timed out after 1s" in check.tail
    assert gone(int(pids.read_text()))
    assert "timed out after 1s" in (tmp_path / "logs" / "task.checks.log").read_text()


def test_the_checks_after_a_timed_out_one_still_run(tmp_path: Path) -> None:
    runs = run(tmp_path, "sleep 1000", "echo next", timeout=0.5)
    assert runs[0].timed_out and runs[1].passed


def test_ctrl_c_stops_the_checks_group_and_raises_interrupted(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # SIGINT to ourselves, as a terminal's Ctrl+C would, once the check is running.
    def press() -> None:
        for _ in range(200):
            if pids.exists() and pids.read_text().strip():
                break
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)
    presser = threading.Thread(target=press)
    presser.start()
    try:
        with pytest.raises(Interrupted):
            run(tmp_path, f"sleep 1000 & echo $! > {pids}; wait", "echo never-runs")
    finally:
        presser.join()
    assert gone(int(pids.read_text()))
    assert "never-runs" not in (tmp_path / "logs" / "task.checks.log").read_text()


def test_baseline_passes_or_names_the_failing_check(tmp_path: Path) -> None:
    log = tmp_path / "baseline.log"
    ok = checks.baseline(["true", "echo fine"], tmp_path, log, 30)
    assert [r.passed for r in ok] == [True, True]
    with pytest.raises(CheckFailed) as caught:
        checks.baseline(["true", "echo 'E   assert 1 == 2'; exit 1"], tmp_path, log, 30,
                        log_name=".agent-loop/logs/baseline.log")
    message = str(caught.value)
    assert isinstance(caught.value, AgentLoopError) and caught.value.exit_code == 1
    assert "echo 'E   assert 1 == 2'; exit 1" in message and "exit 1" in message
    assert "    E   assert 1 == 2" in message and ".agent-loop/logs/baseline.log" in message
    assert "`true`" not in message


def made(command: str, code: int = 1, tail: str = "boom\n", round_: int = 0,
         timed_out: bool = False, seconds: float = 1.0) -> CheckRun:
    return CheckRun(command, code, seconds, "logs/t.log", round_, timed_out, tail)


def test_fix_prompt_names_command_exit_and_output() -> None:
    prompt = checks.fix_prompt([made("pytest -q", 1, "FAILED test_x\n"),
                                made("ruff check .", -2, "slow\n", timed_out=True)], 1, 2)
    assert "$ pytest -q\n(it exited with code 1" in prompt and "FAILED test_x" in prompt
    assert "$ ruff check .\n(it was stopped after its time limit" in prompt
    assert "2 fail" in prompt and "fix round 1 of 2" in prompt
    assert "do not change, skip or weaken the checks" in prompt


def test_summary_lines() -> None:
    passed = [made("pytest -q", 0, seconds=14.0), made("ruff check .", 0, seconds=0.2)]
    assert checks.summary(passed, 2) == "checks: 2/2 passed (14.2s)"
    assert checks.summary([made("pytest -q")], 2) == \
        "check failed: pytest -q (exit 1) — fix round 1/2"
    assert checks.summary([made("a", round_=1), made("b", 0, round_=1)], 2) == \
        "check failed: a (exit 1) — fix round 2/2"
    assert checks.summary([made("a", round_=2), made("b", timed_out=True, round_=2)], 2) == \
        "checks failed: a (exit 1), b (timed out) — no fix rounds left"


def test_commit_line_and_timeout_message() -> None:
    assert checks.commit_line(["pytest -q", "ruff check ."]) == \
        "Checks passed: pytest -q, ruff check ."
    assert "timed out after 600s" in checks.timeout_message("pytest -q", 600)
    assert "--check-timeout" in checks.timeout_message("pytest -q", 600)


def test_failure_text_is_bounded() -> None:
    text = checks.failure_text([made("pytest -q", 1, "x" * 5000)])
    assert text.startswith("check `pytest -q` still fails (exit 1): ") and len(text) < 1600


def test_argv_never_puts_the_command_in_the_script() -> None:
    line = "echo '$1'; rm -rf \"$0\""
    argv = checks.argv(line)
    assert argv[:3] == ["/bin/sh", "-c", checks.LAUNCH] and argv[-1] == line
    assert shutil.which(argv[0])


def test_the_log_can_be_followed_while_the_check_runs(tmp_path: Path) -> None:
    log, go = tmp_path / "logs" / "task.checks.log", tmp_path / "go"
    seen: list[str] = []

    # The check ends only once the log was read (`go`): one that slept 2 s before its end was
    # read 2 s after the watcher began, too early when a loaded machine started it late.
    def peek() -> None:
        deadline = time.monotonic() + 30
        text = ""
        while not text.endswith("second\n") and time.monotonic() < deadline:
            time.sleep(0.05)
            text = log.read_text() if log.exists() else ""
        seen.append(text)
        go.touch()
    watcher = threading.Thread(target=peek)
    watcher.start()
    run(tmp_path, f"echo early; sleep 1; echo second; until [ -e {go} ]; do sleep 0.05; done; "
                  "echo the end")
    watcher.join()
    assert seen[0].endswith("\nearly\nsecond\n")
