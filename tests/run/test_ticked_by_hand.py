"""A task the run left for a person (its change kept off the main line, or not approved) that the
person settled by hand and then ticked in the plan: the next run takes the tick as the word that
it is settled, with the fake claude and real git."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.run.test_parallel import CONFLICT_PLAN, RIGHT, conflict_project
from tests.run.test_review import TASKS, git_work
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, state_of
from tests.support.runner import agent_loop


def test_a_conflicted_task_resolved_by_hand_and_ticked_is_skipped_not_a_crash(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    # A checklist: in a plan of plain bullets, a box ticked would make the others notes.
    (work / "tasks.md").write_text(CONFLICT_PLAN.format(left=0, right=2).replace("- ", "- [ ] "))
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 4, done.stdout + done.stderr
    kept = state_of(work)["tasks"][1]["change_id"]
    # Resolved by hand on the main line, then ticked in the plan.
    (work / "shared.txt").write_text("left and right\n")
    git(work, "commit", "-qam", "both sides, by hand")
    plan = (work / "tasks.md").read_text()
    (work / "tasks.md").write_text(plan.replace("- [ ] right edit", "- [x] right edit"))
    calls = len(fake_claude.task_prompts())
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "internal error" not in again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "skipped",
                                                              "completed"]
    assert (f"task 2 was conflicted: ticked, it is skipped, its kept commit {kept[:12]} not "
            "landed") in again.stdout
    # Only the follow-up ran.
    assert len(fake_claude.task_prompts()) == calls + 1
    assert (work / "shared.txt").read_text() == "left and right\n"
    # The lane started afresh from your branch; its kept commit is still named, never landed.
    assert git(work, "rev-parse", f"refs/agent-loop/previous/{RIGHT}").strip() == kept
    # --status no longer tells you to resolve it and run again to land it.
    status = agent_loop(work, "--status")
    assert status.returncode == 0 and "resolve it there" not in status.stdout, status.stdout
    assert kept not in git(work, "rev-list", "main")


def test_an_unapproved_task_ticked_is_completed_not_a_crash(tmp_path: Path,
                                                            fake_claude: FakeClaude) -> None:
    plan = TASKS.replace("- ", "- [ ] ")
    work = git_work(tmp_path, plan)
    done = agent_loop(work, "--vcs", "git", "--review", "--no-distill", "--max-review-rounds", "2")
    assert done.returncode == 4, done.stderr
    (work / "tasks.md").write_text(plan.replace("- [ ] never", "- [x] never"))
    calls = len(fake_claude.calls())
    again = agent_loop(work, "--vcs", "git", "--review", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "internal error" not in again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"]
    kept = state_of(work)["tasks"][1]["change_id"]
    assert f"task 2 was unapproved: ticked, it is completed, its change {kept[:12]} taken as " \
        "approved" in again.stdout
    assert len(fake_claude.calls()) == calls
    status = agent_loop(work, "--status")
    assert status.returncode == 0 and "unapproved" not in status.stdout, status.stdout


def test_a_conflicted_task_ticked_while_the_run_works_is_skipped_and_its_commit_named(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    plan = CONFLICT_PLAN.format(left=0, right=2).replace("- ", "- [ ] ")
    (work / "tasks.md").write_text(plan)
    assert agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill").returncode == 4
    kept = state_of(work)["tasks"][1]["change_id"]
    # The next run's first task (Left's, ahead of Right's) is where you tick it, by hand.
    tick = tmp_path / "tick.py"
    tick.write_text("import pathlib, sys\np = pathlib.Path(sys.argv[1])\n"
                    "p.write_text(p.read_text().replace('- [ ] right edit', '- [x] right edit'))\n")
    (work / "tasks.md").write_text(plan.replace(
        "## Right", f"- [ ] left more\n  FAKE: bash {sys.executable} {tick} {work / 'tasks.md'}\n"
                    "  FAKE: write more.txt more\n\n## Right"))
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    statuses = {t["task"].splitlines()[0]: t["status"] for t in state_of(work)["tasks"]}
    assert statuses == {"left edit": "completed", "left more": "completed",
                        "right edit": "skipped", "right follow-up": "completed"}
    assert f"its kept commit {kept[:12]} not landed" in again.stdout, again.stdout
    status = agent_loop(work, "--status")
    assert status.returncode == 0 and "resolve it there" not in status.stdout, status.stdout
    assert kept not in git(work, "rev-list", "main")
