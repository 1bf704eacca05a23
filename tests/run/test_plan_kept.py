"""The plan never vanishes silently: an agent's `jj undo` deletes a task file jj had not recorded
yet (no VCS has a copy of the plan, which is never part of a task's change); the run puts it back
as it last read it and says so in one line, before the next task and at the run's end."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo, state_of
from tests.support.runner import agent_loop

PLAN = ("# P\n## A\n- [ ] T1\n  FAKE: write a.txt a\n- [ ] T2 undo\n  FAKE: write b.txt b\n"
        "  FAKE: bash {undo}\n- [ ] T3\n  FAKE: write c.txt c\n")


def test_a_plan_an_agents_jj_undo_deleted_is_put_back(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "jj")
    plan = PLAN.format(undo="jj undo")
    (work / "tasks.md").write_text(plan)  # written after jj's last snapshot: jj never saw it
    done = agent_loop(work, "--vcs", "jj", "--workplace", "checkout", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text() == plan
    assert done.stdout.count("tasks.md vanished from disk") == 1
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert agent_loop(work, "--status").returncode == 0


def test_a_plan_the_last_task_deleted_is_put_back_at_the_end(tmp_path: Path,
                                                             fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git")
    plan = "- [ ] T1\n  FAKE: write a.txt a\n  FAKE: bash rm tasks.md\n"
    (work / "tasks.md").write_text(plan)
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill",
                      "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text() == plan
    assert "tasks.md vanished from disk" in done.stdout + done.stderr
