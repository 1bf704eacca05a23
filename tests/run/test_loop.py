"""The loop with the fake claude: sessions per group, failures, skips and resumes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from tests.support.fake_agent import FakeClaude


def run(work: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, ["tasks.md", "--vcs", "none", *args],
                                catch_exceptions=False, env={"NO_COLOR": "1"})
    return result.exit_code, result.output


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def tasks_of(work: Path) -> list[dict]:
    return orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"]


def test_sessions_chain_inside_groups(work: Path, fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("## A\n- one\n- two\n- three\n## B\n- four\n")
    code, out = run(work)
    assert code == 0, out
    tasks = tasks_of(work)
    assert [t["status"] for t in tasks] == ["completed"] * 4
    assert len({t["session_id"] for t in tasks[:3]}) == 1
    assert tasks[3]["session_id"] != tasks[0]["session_id"]
    assert fake_claude.session(tasks[0]["session_id"]) == ["one", "two", "three"]
    resumes = ["--resume" in c["argv"] for c in fake_claude.calls()]
    assert resumes == [False, True, True, False]


def test_a_failed_task_breaks_the_chain_and_the_run_goes_on(work: Path,
                                                            fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("## A\n- one\n- two\n  FAKE: exit 1\n"
                                   '  FAKE: advise {"retry": false, "reason": "hopeless"}\n'
                                   "- three\n")
    code, out = run(work)
    assert code == 4, out  # a task the run set out to run failed
    tasks = tasks_of(work)
    assert [t["status"] for t in tasks] == ["completed", "failed", "completed"]
    assert tasks[1]["error"] == "hopeless"
    assert "simulated failure" in tasks[1]["history"][0]["reason"]
    calls = fake_claude.task_runs()
    assert "--resume" in calls[1]["argv"] and "--resume" not in calls[2]["argv"]
    assert "run ended without success: simulated failure" in out
    assert "advisor: give up: hopeless" in out


@pytest.mark.parametrize("fault, words", [
    ("exit 2", "simulated failure"), ("garbage", "no result line"), ("silent", "no result line"),
    ("cut", "no result line"), ("crash", "no result line"), ("fail 1", "simulated failure"),
])
def test_a_failing_agent_never_crashes_the_tool(work: Path, fake_claude: FakeClaude, fault: str,
                                                words: str) -> None:
    advice = '  FAKE: advise {"retry": false, "reason": "no"}\n' if fault != "fail 1" else ""
    (work / "tasks.md").write_text(f"- first\n  FAKE: {fault}\n{advice}- second\n")
    code, out = run(work)
    # "fail 1" fails once, and the advisor's default advice retries it.
    expected = "completed" if fault == "fail 1" else "failed"
    assert code == (0 if fault == "fail 1" else 4), out
    tasks = tasks_of(work)
    assert [t["status"] for t in tasks] == [expected, "completed"]
    assert words in tasks[0]["history"][0]["reason"]


def test_rerun_skips_completed_and_retries_failed(work: Path, fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("- [ ] one\n- [ ] two\n  FAKE: fail 1\n"
                                   '  FAKE: advise {"retry": false}\n- [x] done by hand\n')
    run(work)
    assert [t["status"] for t in tasks_of(work)] == ["completed", "failed", "skipped"]
    code, out = run(work)
    assert code == 0
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed", "skipped"]
    assert tasks_of(work)[1]["attempts"] == 2
    runs = fake_claude.task_runs()
    assert [c["stdin"].splitlines()[0] for c in runs] == ["one", "two", "two"]
    assert "1 of 3 task(s) to run" in out


def test_task_text_reaches_claude_unchanged(work: Path, fake_claude: FakeClaude) -> None:
    text = "-rf $(echo pwned) `id` \"quoted\" 'single'\n  second line; rm -rf /"
    (work / "tasks.md").write_text(f"- {text}\n")
    run(work)
    assert fake_claude.prompts() == [
        "-rf $(echo pwned) `id` \"quoted\" 'single'\nsecond line; rm -rf /"]


def test_root_refusal_stops_the_run_with_advice(work: Path, fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("- FAKE: root\n- two\n")
    code, out = run(work)
    assert code == 1
    assert "IS_SANDBOX=1" in out
    assert len(fake_claude.calls()) == 1


def test_console_live_line_only_on_request() -> None:
    import io

    from agentloop.console.live import Console
    from agentloop.run.events import AgentActivity, AgentStarted

    plain = io.StringIO()
    console = Console(plain)
    console(AgentStarted("log", None))
    console(AgentActivity("Write a.py"))
    console.close()
    assert "\r" not in plain.getvalue() and "Write a.py" not in plain.getvalue()
    live = io.StringIO()
    console = Console(live, live=True)
    console(AgentStarted("log", None))
    console(AgentActivity("Write a.py", "Write a.py", 1, 1))
    console.close()
    assert "\x1b[2K  … " in live.getvalue() and "Write a.py" in live.getvalue()


def test_a_failed_task_run_again_later_starts_fresh_with_the_last_hint(
        work: Path, fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("## G\n- one\n- two\n  FAKE: fail 1\n"
                                   '  FAKE: advise {"retry": false, "reason": "later", '
                                   '"hint": "mind the gap"}\n')
    code, _ = run(work)
    assert code == 4 and [t["status"] for t in tasks_of(work)] == ["completed", "failed"]
    code, out = run(work)
    assert code == 0, out
    runs = fake_claude.task_runs()
    # The first try of task 2 continued the group's session; the later one starts fresh, with
    # the advisor's hint, as a retry does.
    assert "--resume" in runs[1]["argv"] and "--resume" not in runs[2]["argv"]
    assert "Advice for this attempt: mind the gap" in runs[2]["stdin"]


def test_again_runs_a_completed_task_once_more_in_a_new_change(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("- one\n- two\n")
    assert run(work)[0] == 0
    code, out = run(work, "--task", "2")
    assert code == 1 and "--task 2 --again" in out
    code, out = run(work, "--task", "2", "--again")
    assert code == 0, out
    two = tasks_of(work)[1]
    assert two["status"] == "completed" and two["attempts"] == 1
    assert [a["outcome"] for a in two["history"]] == ["completed", "completed"]
    runs = fake_claude.task_prompts()
    assert runs == ["one", "two", "two"]
    code, out = run(work, "--again")
    assert code == 2 and "--again goes with --task" in out
