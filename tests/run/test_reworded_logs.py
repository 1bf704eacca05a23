"""A task reworded in the plan (reconciled, no --reset) is logged under its new words from its
next attempt on; the logs of its earlier attempts keep their names (the state's history, the
archive and events.jsonl point at them), and no new attempt writes over one of them. With the
fake claude and real git."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.run.test_controller import edited_plan
from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, state_of
from tests.support.runner import agent_loop


def _logs(work: Path) -> list[str]:
    return sorted(p.name for p in (work / ".agent-loop" / "logs").glob("*.log"))


def _started(work: Path) -> list[str]:
    """The log of every agent run, as events.jsonl names it."""
    events = (work / ".agent-loop" / "events.jsonl").read_text().splitlines()
    return [Path(e["log"]).name for e in map(json.loads, events) if e["type"] == "AgentStarted"]


def test_a_task_reworded_while_the_run_works_is_logged_under_its_new_words(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(edited_plan(work, tmp_path))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "task 3 was reworded while an agent ran (by it, or you)" in done.stdout
    logs = _logs(work)
    assert "003-words--new-wording.log" in logs, logs
    assert not any("old-wording" in name for name in logs), logs
    three = state_of(work)["tasks"][2]
    assert (three["log_name"], three["log"]) == (
        "003-words--new-wording", ".agent-loop/logs/003-words--new-wording.log")
    assert "003-words--new-wording.log" in _started(work)
    status = json.loads(agent_loop(work, "--status", "--json").stdout)
    assert status["tasks"][2]["log"] == ".agent-loop/logs/003-words--new-wording.log"


def test_a_failed_task_reworded_between_runs_keeps_its_old_log_and_logs_anew(
        work: Path, fake_claude: FakeClaude) -> None:
    """Its first line unchanged, so its words give the same name: its new record's first
    attempt must not write over the old record's first attempt's log, which the archive
    names."""
    init_repo(work, "git")
    (work / "tasks.md").write_text("- fix the login bug\n  FAKE: fail 9\n  FAKE: say first\n")
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1")
    assert first.returncode == 4, first.stdout + first.stderr
    old_log = work / ".agent-loop" / "logs" / "001-ungrouped--fix-the-login-bug.log"
    old_text = old_log.read_text()
    (work / "tasks.md").write_text("- fix the login bug\n  FAKE: fail 9\n  FAKE: say second\n"
                                   "  look at the session cookie too\n")
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1")
    assert again.returncode == 4, again.stdout + again.stderr
    assert old_log.read_text() == old_text  # the first wording's attempt, as it was
    (archived,) = (work / ".agent-loop" / "archive").glob("*.json")
    assert ".agent-loop/logs/001-ungrouped--fix-the-login-bug.log" in archived.read_text()
    now = state_of(work)["tasks"][0]
    assert now["log"] != ".agent-loop/logs/001-ungrouped--fix-the-login-bug.log"
    assert "fix-the-login-bug" in now["log"] and (work / now["log"]).exists()
    assert "look at the session cookie" in (work / now["log"]).read_text()
    assert Path(now["log"]).name == _started(work)[-1]


def test_a_done_task_reworded_runs_again_under_its_new_words(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- fix teh typo\n  FAKE: write a.txt a\n")
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    (work / "tasks.md").write_text("- fix the typo\n  FAKE: write a.txt b\n")
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "1", "--again")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "001-ungrouped--fix-teh-typo.log" in _logs(work)   # the first attempt's, kept
    assert state_of(work)["tasks"][0]["log"] == \
        ".agent-loop/logs/001-ungrouped--fix-the-typo-attempt2.log"


def test_a_plan_edited_mid_run_logs_each_task_under_a_number_of_its_own(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A user's morning: while task 2 runs, task 3 is deleted, task 5 reworded, task 7 added.
    # Task 4 keeps its 004- logs; the reworded task 5 was logged under 004- too.
    init_repo(work, "git")
    script = tmp_path / "edit.py"
    script.write_text("import pathlib, sys\np = pathlib.Path(sys.argv[1])\nt = p.read_text()\n"
                      "t = t.replace('- [ ] a3\\n  FAKE: write a3.txt 3\\n', '')\n"
                      "t = t.replace('- [ ] b2 as it was\\n', '- [ ] b2 as it reads now\\n')\n"
                      "t += '- [ ] b4\\n  FAKE: write b4.txt 4\\n'\np.write_text(t)\n")
    (work / "tasks.md").write_text(
        "## A\n- [ ] a1\n  FAKE: write a1.txt 1\n"
        f"- [ ] a2\n  FAKE: bash {sys.executable} {script} {work / 'tasks.md'}\n"
        "  FAKE: write a2.txt 2\n- [ ] a3\n  FAKE: write a3.txt 3\n"
        "## B\n- [ ] b1\n  FAKE: write b1.txt 1\n- [ ] b2 as it was\n  FAKE: write b2.txt 2\n"
        "- [ ] b3\n  FAKE: write b3.txt 3\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    numbers = [name.split("-", 1)[0] for name in _logs(work)]
    assert len(set(numbers)) == len(numbers), _logs(work)
    assert "004-b--b1.log" in _logs(work) and "005-b--b2-as-it-reads-now.log" in _logs(work)
    status = agent_loop(work, "--status").stdout
    assert "log: .agent-loop/logs/004-" in status and status.count("logs/004-") == 1, status
