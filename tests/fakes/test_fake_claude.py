"""The fake claude must behave like the real one where we rely on it, and refuse surprises."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude

BASE = ["-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions",
        "--model", "opus", "--append-system-prompt", "rules"]


def call(fake: FakeClaude, prompt: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(fake.bin), *BASE, *extra], cwd=cwd, input=prompt,
                          capture_output=True, text=True, timeout=30)


def lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_reply_has_init_and_result_lines(fake_claude: FakeClaude, tmp_path: Path) -> None:
    done = call(fake_claude, "hello", tmp_path)
    assert done.returncode == 0
    events = lines(done.stdout)
    assert events[0]["type"] == "system" and events[0]["subtype"] == "init"
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is False
    assert events[-1]["session_id"] == events[0]["session_id"]


def test_refuses_unexpected_arguments(fake_claude: FakeClaude, tmp_path: Path) -> None:
    done = subprocess.run([str(fake_claude.bin), *BASE, "--max-turns", "3"], input="x",
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 97
    assert "unexpected argument '--max-turns'" in done.stderr


def test_refuses_a_prompt_in_argv_or_none_at_all(fake_claude: FakeClaude,
                                                tmp_path: Path) -> None:
    done = subprocess.run([str(fake_claude.bin), *BASE, "--", "x"], cwd=tmp_path,
                          capture_output=True, text=True, input="")
    assert done.returncode == 97 and "unexpected argument '--'" in done.stderr
    done = subprocess.run([str(fake_claude.bin), *BASE], cwd=tmp_path, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 97 and "no prompt on stdin" in done.stderr


def test_records_argv_and_writes_files(fake_claude: FakeClaude, tmp_path: Path) -> None:
    call(fake_claude, "FAKE: write sub/a.txt hello world", tmp_path)
    assert (tmp_path / "sub" / "a.txt").read_text() == "hello world\n"
    assert fake_claude.prompts() == ["FAKE: write sub/a.txt hello world"]


def test_resume_keeps_session_and_unknown_id_fails(fake_claude: FakeClaude, tmp_path: Path) -> None:
    first = lines(call(fake_claude, "one", tmp_path).stdout)[-1]["session_id"]
    second = lines(call(fake_claude, "two", tmp_path, "--resume", first).stdout)[-1]
    assert second["session_id"] == first
    assert fake_claude.session(first) == ["one", "two"]
    bad = call(fake_claude, "three", tmp_path, "--resume", "nope")
    assert bad.returncode == 1 and bad.stdout == ""
    assert "No conversation found with session ID: nope" in bad.stderr


def test_fail_n_then_succeed(fake_claude: FakeClaude, tmp_path: Path) -> None:
    outcomes = [call(fake_claude, "FAKE: fail 2", tmp_path).returncode for _ in range(3)]
    assert outcomes == [1, 1, 0]


def test_faults(fake_claude: FakeClaude, tmp_path: Path) -> None:
    assert "not json" in call(fake_claude, "FAKE: garbage", tmp_path).stdout
    cut = call(fake_claude, "FAKE: cut", tmp_path).stdout.splitlines()[-1]
    assert cut.startswith('{"type": "result"') and not cut.endswith("}")
    assert call(fake_claude, "FAKE: crash", tmp_path).returncode == -9
    root = call(fake_claude, "FAKE: root", tmp_path)
    assert root.returncode == 1 and "root/sudo" in root.stderr


def test_limit_says_its_reset_while_the_run_fails(fake_claude: FakeClaude,
                                                 tmp_path: Path) -> None:
    prompt = "FAKE: fail 1\nFAKE: limit 1900000000"
    limited = lines(call(fake_claude, prompt, tmp_path).stdout)
    event = next(e for e in limited if e["type"] == "rate_limit_event")
    assert event["rate_limit_info"]["resetsAt"] == 1900000000
    assert limited[-1]["is_error"] and limited[-1]["api_error_status"] == 429
    after = lines(call(fake_claude, prompt, tmp_path).stdout)
    assert not after[-1]["is_error"] and all(e["type"] != "rate_limit_event" for e in after)


ADVISOR = ["-p", "--output-format", "json", "--model", "haiku", "--tools", "",
           "--no-session-persistence"]


def advise_call(fake: FakeClaude, prompt: str, cwd: Path,
                argv: list[str] = ADVISOR) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(fake.bin), *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=30, input=prompt)


def test_advisor_mode_prints_one_result_object(fake_claude: FakeClaude, tmp_path: Path) -> None:
    done = advise_call(fake_claude, "Attempt 1 of at most 5 just failed.", tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["type"] == "result" and result["is_error"] is False
    assert json.loads(result["result"]) == {"retry": True, "reason": "looks transient",
                                            "hint": "try again"}
    assert result["total_cost_usd"] == 0.001 and result["usage"]["output_tokens"] == 20
    assert result["session_id"]
    assert fake_claude.calls()[0]["argv"] == ADVISOR
    assert fake_claude.calls()[0]["stdin"] == "Attempt 1 of at most 5 just failed."
    # --no-session-persistence: nothing to resume afterwards.
    assert not (fake_claude.state / "sessions").exists()


def test_advisor_answers_verbatim_and_fails_on_request(fake_claude: FakeClaude,
                                                       tmp_path: Path) -> None:
    text = '```json {"retry": false, "reason": "needs a person"} ``` and more'
    done = advise_call(fake_claude, f"<task>\n- FAKE: advise {text}\n</task>", tmp_path)
    assert json.loads(done.stdout)["result"] == text
    failed = advise_call(fake_claude, "<task>\nFAKE: advise-fail\n</task>", tmp_path)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["is_error"] is True


def test_advisor_ignores_the_embedded_tasks_directives(fake_claude: FakeClaude,
                                                       tmp_path: Path) -> None:
    task = ("FAKE: write a.txt hello\nFAKE: fail 3\nFAKE: root\nFAKE: hang\nFAKE: exit 3\n"
            "FAKE: say not this\nFAKE: garbage")
    done = advise_call(fake_claude, f"Judge this.\n<task>\n{task}\n</task>", tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"].startswith('{"retry": true')
    assert not (tmp_path / "a.txt").exists()


def test_advisor_mode_refuses_other_arguments(fake_claude: FakeClaude, tmp_path: Path) -> None:
    wrong = [
        [*ADVISOR, "--dangerously-skip-permissions"],
        [a for a in ADVISOR if a != "--no-session-persistence"],
        ["-p", "--output-format", "json", "--model", "haiku", "--tools", "Bash",
         "--no-session-persistence"],
        [*ADVISOR, "--resume", "00000000-0000-4000-8000-000000000001"],
        ["--output-format", "json", "-p", "--model", "haiku", "--tools", "",
         "--no-session-persistence"],
    ]
    for argv in wrong:
        done = advise_call(fake_claude, "x", tmp_path, argv)
        assert done.returncode == 97, argv
        assert "advisor mode needs exactly" in done.stderr
    assert len(fake_claude.calls()) == len(wrong)  # refused calls are recorded too


REVIEWER = ["-p", "--output-format", "stream-json", "--verbose", "--model", "sonnet",
            "--append-system-prompt", "review rules", "--tools", "Read,Grep,Glob",
            "--disallowedTools", "Write,Edit,NotebookEdit,Bash", "--permission-mode", "dontAsk",
            "--strict-mcp-config"]


def review_call(fake: FakeClaude, task: str, cwd: Path,
                argv: list[str] = REVIEWER) -> subprocess.CompletedProcess[str]:
    prompt = (f"Review this.\n<task>\n{task}\n</task>\n"
              "<diff>\nFAKE: review FEEDBACK: not me\n</diff>")
    return subprocess.run([str(fake.bin), *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=30, input=prompt)


def test_reviewer_mode_answers_each_review_in_order(fake_claude: FakeClaude,
                                                    tmp_path: Path) -> None:
    task = "add a\nFAKE: review FEEDBACK: add b\\nand c\nFAKE: review APPROVED"
    answers, sessions = [], set()
    for _ in range(3):
        done = review_call(fake_claude, task, tmp_path)
        assert done.returncode == 0, done.stderr
        events = lines(done.stdout)
        assert events[0]["type"] == "system" and events[0]["tools"] == ["Read", "Grep", "Glob"]
        answers.append(events[-1]["result"])
        sessions.add(events[-1]["session_id"])
    assert answers == ["FEEDBACK: add b\nand c", "APPROVED", "APPROVED"]  # the last repeats
    assert len(sessions) == 3  # a fresh session each time
    other = review_call(fake_claude, "another task", tmp_path)  # no review line: APPROVED
    assert lines(other.stdout)[-1]["result"] == "APPROVED"


def test_reviewer_mode_writes_nothing_and_fails_on_request(fake_claude: FakeClaude,
                                                           tmp_path: Path) -> None:
    task = "FAKE: write a.txt hello\nFAKE: review-fail 1\nFAKE: hang\nFAKE: root"
    failed = review_call(fake_claude, task, tmp_path)
    assert failed.returncode == 1
    result = lines(failed.stdout)[-1]
    assert result["is_error"] is True and result["api_error_status"] == 529
    done = review_call(fake_claude, task, tmp_path)
    assert done.returncode == 0 and lines(done.stdout)[-1]["result"] == "APPROVED"
    assert not (tmp_path / "a.txt").exists()


def test_reviewer_mode_meets_a_usage_limit_on_request(fake_claude: FakeClaude,
                                                     tmp_path: Path) -> None:
    task = "FAKE: review-fail 1\nFAKE: review-limit 1900000000"
    limited = lines(review_call(fake_claude, task, tmp_path).stdout)
    event = next(e for e in limited if e["type"] == "rate_limit_event")
    assert event["rate_limit_info"]["resetsAt"] == 1900000000
    assert limited[-1]["is_error"] and limited[-1]["api_error_status"] == 429
    assert lines(review_call(fake_claude, task, tmp_path).stdout)[-1]["result"] == "APPROVED"


def test_reviewer_mode_refuses_other_arguments(fake_claude: FakeClaude, tmp_path: Path) -> None:
    wrong = [
        [*REVIEWER, "--dangerously-skip-permissions"],
        [*REVIEWER, "--resume", "00000000-0000-4000-8000-000000000001"],
        [a for a in REVIEWER if a != "--strict-mcp-config"],
        [*REVIEWER[:9], "Read,Grep,Glob,Write", *REVIEWER[10:]],
        [*REVIEWER[:13], "plan", *REVIEWER[14:]],
        [*REVIEWER[:11], "Write,Edit", *REVIEWER[12:]],
    ]
    for argv in wrong:
        done = review_call(fake_claude, "x", tmp_path, argv)
        assert done.returncode == 97, argv
        assert "reviewer mode needs exactly" in done.stderr
    budget = review_call(fake_claude, "x", tmp_path, [*REVIEWER, "--max-budget-usd", "2"])
    assert budget.returncode == 0, budget.stderr


def test_pause_waits_in_order_after_a_tool_call(fake_claude: FakeClaude, tmp_path: Path) -> None:
    child = subprocess.Popen([str(fake_claude.bin), *BASE], cwd=tmp_path, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    # The pause is 3 s, not 1: the fake's start and its tool call, which must come before the
    # pause ends, took more than a second on a loaded machine.
    child.stdin.write("FAKE: write a.txt hi\nFAKE: pause 3\n")
    child.stdin.close()
    began = time.monotonic()
    seen = [json.loads(child.stdout.readline()) for _ in range(3)]  # init, tool call, result
    tool_at = time.monotonic() - began
    assert [e["type"] for e in seen] == ["system", "assistant", "user"]
    rest = lines(child.stdout.read())
    assert child.wait(timeout=30) == 0 and rest[-1]["type"] == "result"
    assert time.monotonic() - began >= 3 > tool_at


def test_linger_goes_on_after_sigint_and_a_sigterm_ends_it(fake_claude: FakeClaude,
                                                           tmp_path: Path) -> None:
    import signal

    def started(linger: float) -> subprocess.Popen[str]:
        child = subprocess.Popen([str(fake_claude.bin), *BASE], cwd=tmp_path, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(f"FAKE: write a.txt hi\nFAKE: pause 30\nFAKE: linger {linger}\n")
        child.stdin.close()
        for _ in range(3):  # init, tool call, its result: the handler is set by then
            child.stdout.readline()
        return child

    child, began = started(1.5), time.monotonic()
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=30) == 130 and 1.5 <= time.monotonic() - began < 10
    # A linger longer than the wait for its end: one of 1.5 s could end (130) before a loaded
    # machine sent the SIGTERM 0.3 s later.
    child = started(60)
    child.send_signal(signal.SIGINT)
    time.sleep(0.3)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == -signal.SIGTERM


def test_fakes_started_at_once_get_sessions_of_their_own(fake_claude: FakeClaude,
                                                          tmp_path: Path) -> None:
    # A parallel run's lanes and a fleet's jobs start fakes at the same moment: each new
    # session must be its own, or their costs add up in one session's running total.
    children = [subprocess.Popen([str(fake_claude.bin), *BASE], cwd=tmp_path,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for _ in range(16)]
    for child in children:
        assert child.stdin is not None
        child.stdin.write("hello")
        child.stdin.close()
    results = []
    for child in children:
        assert child.stdout is not None
        results.append(lines(child.stdout.read())[-1])
        child.wait(timeout=60)
    assert len({r["session_id"] for r in results}) == 16
    assert {r["total_cost_usd"] for r in results} == {0.01}


def test_deaf_goes_on_after_sigint_and_sigterm_noting_each(fake_claude: FakeClaude,
                                                           tmp_path: Path) -> None:
    import signal

    child = subprocess.Popen([str(fake_claude.bin), *BASE], cwd=tmp_path, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("FAKE: write a.txt hi\nFAKE: pause 30\nFAKE: deaf\n")
    child.stdin.close()
    session = json.loads(child.stdout.readline())["session_id"]
    for _ in range(2):  # the tool call and its result: the handlers are set by then
        child.stdout.readline()
    for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
        child.send_signal(sig)
        deadline = time.monotonic() + 10
        while (session, name) not in fake_claude.signals():
            assert time.monotonic() < deadline, fake_claude.signals()
            time.sleep(0.05)
    assert child.poll() is None  # neither ended it
    child.kill()
    assert child.wait(timeout=10) == -signal.SIGKILL
    assert fake_claude.signals() == [(session, "SIGINT"), (session, "SIGTERM")]
