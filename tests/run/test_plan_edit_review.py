"""Edits of the plan while a run works, taken in at the run's end (agentloop.run.loop._plan_taken):
a task reworded before it started keeps its record (its runs, its logs); a parallel run does
the same."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.plans import edited_midrun, five_and_task_one_edits, put_back_midrun, task
from tests.support.repos import init_repo, state_of
from tests.support.runner import agent_loop

# Task one's agent rewords task three in the plan (`- [ ] task three` ends its line there only).
REWORDS = ("python3 -c \"import sys; p=sys.argv[1]; t=open(p).read(); "
           "open(p,'w').write(t.replace('- [ ] task three\\n',"
           "'- [ ] task three, reworded\\n'))\" {plan}")


@pytest.mark.parametrize("parallel", [(), ("--parallel", "2")])
def test_a_task_reworded_before_it_ran_keeps_its_record(work: Path, fake_claude: FakeClaude,
                                                       parallel: tuple[str, ...]) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        edited_midrun("one", "two", "three", edit=REWORDS.format(plan=work / "tasks.md")))
    done = agent_loop(work, "--vcs", "git", "--no-distill", *parallel)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = state_of(work)["tasks"]
    status = agent_loop(work, "--status")
    assert "changed" not in status.stdout, status.stdout
    assert "3 completed" in status.stdout, status.stdout
    assert all(t["history"] for t in tasks), tasks
    assert tasks[2]["summary"] == "task three, reworded", tasks
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert "0 of 3 task(s) to run" in again.stdout, again.stdout


def test_a_parallel_run_takes_in_a_removal_and_an_addition_made_while_it_worked(
        work: Path, fake_claude: FakeClaude) -> None:
    five_and_task_one_edits(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    assert "changed" not in status.stdout, status.stdout
    assert "task two" not in status.stdout and "task six" in status.stdout, status.stdout
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "six.txt").exists()
    assert sum("task one" in p for p in fake_claude.task_prompts()) == 1


def test_records_removed_at_a_runs_end_and_the_next_start_are_both_kept(
        work: Path, fake_claude: FakeClaude) -> None:
    """Task two (done) removed while task three ran: the run's end keeps its record in
    archive/removed-<stamp>.json. Task one (done) removed while the last task ran: the next
    run's start keeps that one, often within the same second, under the same stamp: both
    records stay kept (deterministic at the store: tests/state/test_store.py)."""
    init_repo(work, "git")
    plan = work / "tasks.md"
    one, two = task("one"), task("two")
    plan.write_text(one + two)
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0

    def removes(what: str) -> str:
        old = f"- [ ] task {what}\\\\n  FAKE: write {what}.txt {what}\\\\n"
        return (f"bash python3 -c \"import sys; q=sys.argv[1]; t=open(q).read(); "
                f"open(q,'w').write(t.replace('{old}',''))\" {plan}")

    plan.write_text(one + two + task("three", before=[removes("two")]) +
                    task("four", before=[removes("one")]))
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    kept = [record["summary"] for file in (work / ".agent-loop").rglob("removed-*.json")
            for record in orjson.loads(file.read_bytes())]
    assert sorted(kept) == ["task one", "task two"], kept


def test_a_kill_as_the_runs_end_reads_the_history_leaves_a_put_back_task_found_done(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    """A done task deleted from the plan and put back while a run works: the run's end
    records the edited plan and finds that task's commit in the history. Killed (SIGKILL)
    while it reads that history, the next run still finds it done, as its start would have
    had the run not taken the edit in: no agent is paid for it again."""
    import os
    import shutil

    marker = tmp_path / "last-task-ran"
    put_back_midrun(work, tmp_path / "back.py", last=[f"bash touch {marker}"])
    # A git first on PATH that kills agent-loop as it reads the history, once the last task ran.
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "git").write_text(
        f"#!/bin/sh\nif [ -e {marker} ]; then case \"$*\" in *--grep=*) "
        f"kill -9 $PPID; sleep 5;; esac; fi\nexec {shutil.which('git')} \"$@\"\n")
    (shims / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    killed = agent_loop(work, "--vcs", "git", "--no-distill", env=env)
    assert killed.returncode == -9, killed.stdout + killed.stderr
    marker.unlink()
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sum("task two" in p for p in fake_claude.task_prompts()) == 1, again.stdout


@pytest.mark.parametrize("parallel", [(), ("--parallel", "2")])
def test_a_run_that_ticks_its_boxes_and_took_in_an_edit_leaves_no_news(
        work: Path, fake_claude: FakeClaude, parallel: tuple[str, ...]) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        edited_midrun("one", "two", "three", edit=REWORDS.format(plan=work / "tasks.md")))
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes", *parallel)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text().count("- [x]") == 3, (work / "tasks.md").read_text()
    status = agent_loop(work, "--status")
    assert "changed" not in status.stdout and "3 completed" in status.stdout, status.stdout
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert "0 of 3 task(s) to run" in again.stdout, again.stdout
