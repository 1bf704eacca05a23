"""A plan renamed (`git mv tasks.md plan.md`, then `agent-loop plan.md`) takes over the state
of its old name, with the fake claude and real git: its finished tasks stay finished and are not
paid for again; a plan copied beside another (both files there) has a state of its own."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from agentloop.state.tally import money
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project, state_of
from tests.support.runner import agent_loop

PLAN = ("## G\n- [ ] one\n  FAKE: write one.txt 1\n"
        "- [ ] two\n  FAKE: write two.txt 2\n")


def ran(work: Path, plan: str, *args: str) -> str:
    done = agent_loop(work, "--vcs", "git", "--no-distill", *args, plan=plan)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_renamed_plan_keeps_what_it_finished(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    ran(work, "tasks.md")
    assert len(fake_claude.calls()) == 2
    git(work, "mv", "tasks.md", "plan.md")
    preview = agent_loop(work, "--dry-run", plan="plan.md")
    assert "2 task(s), 0 to run" in preview.stdout, preview.stdout + preview.stderr
    out = ran(work, "plan.md")
    assert "plan.md: no state of its own, and tasks.md is gone with the same tasks" in out, out
    assert len(fake_claude.calls()) == 2                  # nothing paid for again
    assert state_of(work)["task_file"] == "plan.md"
    assert "taken over" not in ran(work, "plan.md")      # said once: it is plan.md's now
    # Renamed again and edited: a task added runs, the finished ones do not.
    (work / "plan.md").rename(work / "final.md")
    with (work / "final.md").open("a") as plan:
        plan.write("- [ ] three\n  FAKE: write three.txt 3\n")
    out = ran(work, "final.md")
    assert "final.md: no state of its own, and plan.md is gone with the same tasks" in out, out
    assert len(fake_claude.calls()) == 3 and (work / "three.txt").exists()


def test_a_copy_beside_a_plan_and_a_new_plan_by_an_old_name_start_afresh(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, PLAN)
    ran(work, "tasks.md")
    # A second plan lives in .agent-loop/plans/: renamed, it takes its folder along.
    (work / "other.md").write_text("## H\n- [ ] three\n  FAKE: write three.txt 3\n")
    ran(work, "other.md")
    assert len(fake_claude.calls()) == 3
    (work / "other.md").rename(work / "renamed.md")
    # --status and --dry-run read the old state where it is: they move nothing.
    folders = sorted(p.name for p in (work / ".agent-loop" / "plans").iterdir())
    # Every plan's --status listed other.md as if it were there.
    every = agent_loop(work, "--status", plan=None).stdout.splitlines()
    gone = next(line for line in every if line.startswith("other.md:"))
    assert "its file is gone (deleted; or renamed, and a run of the renamed plan takes " \
        "this state over)" in gone, every
    assert "gone" not in next(line for line in every if line.startswith("tasks.md:")), every
    assert "1 completed" in agent_loop(work, "--status", plan="renamed.md").stdout
    assert "1 task(s), 0 to run" in agent_loop(work, "--dry-run", plan="renamed.md").stdout
    assert sorted(p.name for p in (work / ".agent-loop" / "plans").iterdir()) == folders
    assert "other.md is gone with the same tasks" in ran(work, "renamed.md")
    assert sorted(p.name for p in (work / ".agent-loop" / "plans").iterdir()) != folders
    assert len(fake_claude.calls()) == 3
    # A new plan by the old name is a new plan: the renamed one's state is not its.
    (work / "other.md").write_text("## H\n- [ ] four\n  FAKE: write four.txt 4\n")
    assert "taken over" not in ran(work, "other.md")
    assert len(fake_claude.calls()) == 4
    # A copy of a plan whose file is still there: its own state; the first keeps its own.
    shutil.copy(work / "tasks.md", work / "copy.md")
    assert "taken over" not in ran(work, "copy.md")
    assert len(fake_claude.calls()) == 6
    assert state_of(work)["task_file"] == "tasks.md"
    assert "2 task(s), 0 to run" in agent_loop(work, "--dry-run").stdout


def test_a_new_plan_that_repeats_lines_of_a_finished_deleted_one_runs_them(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A sprint's plan, finished and deleted; the next sprint's repeats its generic lines (run
    # the tests, update the changelog) beside a new task: a new plan, whose tasks all run.
    work = git_project(tmp_path, "## G\n- [ ] build the parser\n  FAKE: write p.txt 1\n"
                                 "- [ ] run the tests\n  FAKE: write t.txt\n"
                                 "- [ ] update the changelog\n  FAKE: write c.txt\n")
    ran(work, "tasks.md")
    assert len(fake_claude.calls()) == 3
    (work / "tasks.md").unlink()
    (work / "sprint2.md").write_text("## G\n- [ ] build the printer\n  FAKE: write q.txt 2\n"
                                     "- [ ] run the tests\n  FAKE: write t.txt\n"
                                     "- [ ] update the changelog\n  FAKE: write c.txt\n")
    out = ran(work, "sprint2.md")
    assert "taken over" not in out, out
    assert len(fake_claude.calls()) == 6


@pytest.mark.parametrize("first", ["b.md", "tasks.md"])
def test_a_plan_renamed_over_another_plan_while_it_runs_keeps_its_state_and_archives_the_other(
        tmp_path: Path, fake_claude: FakeClaude, first: str) -> None:
    """`mv a.md b.md` while a.md's run works, over b.md that had run before (its own state).
    The run said `agent-loop b.md` goes on with this plan, its finished tasks done; but b.md's
    run read b.md's old state ("3 tasks added ... 0 completed tasks kept"), paid a1 again, and
    `--status` listed b.md twice for good. Now the state made from the file b.md is now wins,
    b.md's older state archived (said in one line), and nothing is paid twice."""
    work = git_project(tmp_path, PLAN)
    (work / "b.md").write_text("## B\n- [ ] b1\n  FAKE: write b1.txt 1\n")
    if first == "tasks.md":   # b.md's state in a folder of its own under .agent-loop/plans/
        ran(work, "tasks.md")
    ran(work, "b.md")
    paid = len(fake_claude.task_runs())
    (work / "a.md").write_text(f"## A\n- [ ] a1\n  FAKE: write a1.txt 1\n"
                               f"  FAKE: bash mv {work / 'a.md'} {work / 'b.md'}\n"
                               "- [ ] a2\n  FAKE: write a2.txt 2\n")
    git(work, "add", "a.md", "b.md")
    git(work, "commit", "-qm", "plans")
    moved = agent_loop(work, "--vcs", "git", "--no-distill", plan="a.md")
    assert "a.md was renamed b.md" in moved.stdout, moved.stdout + moved.stderr
    assert len(fake_claude.task_runs()) == paid + 1
    every = [line for line in agent_loop(work, "--status", plan=None).stdout.splitlines()
             if line.startswith("b.md:")]
    assert len(every) == 1 and "2 task(s), 1 done" in every[0], every
    assert "2 task(s): 1 completed, 1 pending" in agent_loop(work, "--status", plan="b.md").stdout
    out = ran(work, "b.md")
    said = [line for line in out.splitlines() if "older state" in line]
    assert len(said) == 1 and "archive" in said[0], out
    assert "added" not in out, out
    assert len(fake_claude.task_runs()) == paid + 2, out    # a2 only: a1 is not paid again
    every = [line for line in agent_loop(work, "--status", plan=None).stdout.splitlines()
             if line.startswith("b.md:")]
    assert len(every) == 1 and "2 task(s), 2 done" in every[0], every
    assert "taken over" not in ran(work, "b.md") and len(fake_claude.task_runs()) == paid + 2
    assert "1 task(s), 1 done" not in agent_loop(work, "--status", plan=None).stdout


def test_a_new_plan_by_the_name_of_a_plan_renamed_while_it_ran_starts_afresh(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`mv plan.md new.md` while plan.md's run works (plan.md not the repository's first
    plan), then a new plan.md. Its run took over new.md's state (its a1 "done", new.md's
    session resumed) and saved it as plan.md's; `agent-loop new.md` then found no state and
    paid a1 again. Now the renamed plan's state goes with its new name: the new plan.md runs
    both its tasks, and new.md runs only a2."""
    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "first")
    ran(work, "tasks.md")
    (work / "plan.md").write_text(f"## A\n- [ ] a1\n  FAKE: write a1.txt 1\n"
                                  f"  FAKE: bash mv {work / 'plan.md'} {work / 'new.md'}\n"
                                  "- [ ] a2\n  FAKE: write a2.txt 2\n")
    git(work, "add", "plan.md")
    git(work, "commit", "-qm", "plan")
    moved = agent_loop(work, "--vcs", "git", "--no-distill", plan="plan.md")
    assert "plan.md was renamed new.md" in moved.stdout, moved.stdout + moved.stderr
    paid = len(fake_claude.task_runs())
    (work / "plan.md").write_text("## A\n- [ ] a1\n  FAKE: write a1.txt one\n"
                                  "- [ ] b9\n  FAKE: write b9.txt 9\n")
    assert "2 task(s), 2 to run" in agent_loop(work, "--dry-run", plan="plan.md").stdout
    assert "1 completed, 1 pending" in agent_loop(work, "--status", plan="new.md").stdout
    out = ran(work, "plan.md")
    assert "taken over" not in out, out
    assert len(fake_claude.task_runs()) == paid + 2, out          # a1 and b9: a new plan
    out = ran(work, "new.md")
    assert len(fake_claude.task_runs()) == paid + 3, out          # a2 only
    assert "2 task(s): 2 completed" in agent_loop(work, "--status", plan="new.md").stdout
    assert "2 task(s): 2 completed" in agent_loop(work, "--status", plan="plan.md").stdout


def test_a_start_beside_a_run_whose_pid_file_was_deleted_moves_no_state(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`mv a.md b.md` while a.md's run works, b.md having a state of its own, and the run's
    `.agent-loop/run.pid` deleted (an agent's `git clean -fdx`): a start of `agent-loop b.md`
    then, before it found the run lock held, archived b.md's state into the live run's folder
    and renamed that folder while the run wrote to it. Now nothing is moved but under the
    lock: the start is refused and changes nothing."""
    work = git_project(tmp_path, PLAN)
    ran(work, "tasks.md")
    (work / "b.md").write_text("## B\n- [ ] b1\n  FAKE: write b1.txt 1\n")
    ran(work, "b.md")
    paid = len(fake_claude.task_runs())
    beside = tmp_path / "beside.txt"
    start = (f"cd {work} && PYTHONPATH={os.pathsep.join(sys.path)} {sys.executable} -m agentloop "
             f"--vcs git --no-distill b.md > {beside} 2>&1")
    (work / "a.md").write_text(f"## A\n- [ ] a1\n  FAKE: write a1.txt 1\n"
                               f"  FAKE: bash mv {work / 'a.md'} {work / 'b.md'}\n"
                               f"  FAKE: bash rm {work / '.agent-loop' / 'run.pid'}\n"
                               f"  FAKE: bash {start}\n"
                               "- [ ] a2\n  FAKE: write a2.txt 2\n")
    git(work, "add", "a.md", "b.md")
    git(work, "commit", "-qm", "plans")
    before = sorted(p.name for p in (work / ".agent-loop" / "plans").iterdir())
    moved = agent_loop(work, "--vcs", "git", "--no-distill", plan="a.md")
    assert "another agent-loop run holds" in beside.read_text(), beside.read_text()
    assert "a.md was renamed b.md" in moved.stdout, moved.stdout + moved.stderr
    after = sorted(p.name for p in (work / ".agent-loop" / "plans").iterdir())
    mine = [name for name in after if name.startswith("a-md-")]
    assert after == sorted(before + mine) and len(mine) == 1, after
    folder = work / ".agent-loop" / "plans" / mine[0]
    assert (folder / "state.json").exists() and not (folder / "archive").exists()
    assert len(fake_claude.task_runs()) == paid + 1
    out = ran(work, "b.md")
    assert "older state is archived" in out, out
    assert len(fake_claude.task_runs()) == paid + 2, out    # a2 only


def _costs(work: Path, plan: str) -> tuple[float, float]:
    """b.md's cost as `--status` of every plan and `--status b.md` say it (--json)."""
    import json

    every = json.loads(agent_loop(work, "--status", "--json", plan=None).stdout)["plans"]
    lines = [p["cost_usd"] for p in every if p["task_file"] == plan]
    assert len(lines) == 1, every
    mine = json.loads(agent_loop(work, "--status", "--json", plan=plan).stdout)
    return lines[0], mine["cost_usd"]


def renamed_over_b(work: Path) -> None:
    """a.md run, its first task's agent renaming it over b.md (`mv a.md b.md`): a1 paid."""
    (work / "a.md").write_text(f"## A\n- [ ] a1\n  FAKE: write a1.txt 1\n"
                               f"  FAKE: bash mv {work / 'a.md'} {work / 'b.md'}\n"
                               "- [ ] a2\n  FAKE: write a2.txt 2\n")
    git(work, "add", "a.md", "b.md")
    git(work, "commit", "-qm", "plans")
    agent_loop(work, "--vcs", "git", "--no-distill", plan="a.md")


@pytest.mark.parametrize("first", ["b.md", "tasks.md"])
def test_the_cost_of_a_plan_renamed_over_still_counts_in_its_totals(
        tmp_path: Path, fake_claude: FakeClaude, first: str) -> None:
    """`mv a.md b.md` while a.md's run works, b.md having run (b1 paid). b.md's older state was
    no plan's line of `--status` (it listed the renamed plan's state), and once b.md's next run
    archived it, its cost was in no total at all: money spent that no total showed. It counts
    in b.md's totals now, before the archive and after, and the run's line says so."""
    work = git_project(tmp_path, PLAN)
    (work / "b.md").write_text("## B\n- [ ] b1\n  FAKE: write b1.txt 1\n")
    if first == "tasks.md":
        ran(work, "tasks.md")
    ran(work, "b.md")
    each = _costs(work, "b.md")[0]     # one task's run: the fake's price is the same for each
    assert each > 0
    renamed_over_b(work)
    assert _costs(work, "b.md") == pytest.approx((2 * each, 2 * each))   # b1 and a1
    out = ran(work, "b.md")
    said = [line for line in out.splitlines() if "older state" in line]
    assert len(said) == 1 and "its cost still counts in b.md's totals" in said[0], out
    assert _costs(work, "b.md") == pytest.approx((3 * each, 3 * each))   # and a2
    assert _costs(work, "b.md") == pytest.approx((3 * each, 3 * each))   # counted once
    assert len(fake_claude.task_runs()) == (5 if first == "tasks.md" else 3)


def _names(folder: Path, name: str) -> bool:
    """Whether the state in `folder` names the plan `name` (its journal's lines included)."""
    import json

    said = json.dumps(name)
    return any(said in p.read_text(errors="replace")
               for p in (folder / "state.json", folder / "state.journal") if p.exists())


def test_a_plan_moved_while_its_run_worked_and_the_run_killed_keeps_its_state(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`mv plan.md sub/plan.md` while a run works, and the run killed (kill -9) after it saved
    its state under sub/plan.md but before its end, where the state's folder follows the new
    name: the folder kept the old name. `git checkout plan.md` then `agent-loop plan.md` took
    that folder (and sub/plan.md's finished tasks) for its own, and `agent-loop sub/plan.md`
    found no state and paid every task again. The state is sub/plan.md's: a plan.md run moves
    it where the killed run would have, starts with none of it, and sub/plan.md pays only the
    tasks left."""
    import signal
    import subprocess
    import time

    work = git_project(tmp_path, PLAN)
    ran(work, "tasks.md")    # plan.md's state in a folder of its own under .agent-loop/plans/
    moved = work / "sub" / "plan.md"
    (work / "plan.md").write_text(
        f"## A\n- [ ] a1\n  FAKE: write a1.txt 1\n  FAKE: bash mkdir -p {work / 'sub'} && "
        f"mv {work / 'plan.md'} {moved}\n- [ ] a2\n  FAKE: write a2.txt 2\n"
        "## B\n- [ ] b1\n  FAKE: write b1.txt 1\n  FAKE: pause 10\n")
    git(work, "add", "plan.md")
    git(work, "commit", "-qm", "plan")
    before = len(fake_claude.task_runs())
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "plan.md", "--vcs", "git",
                             "--no-distill", "--parallel", "2"], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    folder, end = None, time.monotonic() + 60
    while time.monotonic() < end:
        plans = work / ".agent-loop" / "plans"
        folder = next((f for f in plans.iterdir() if _names(f, "sub/plan.md")), None) \
            if plans.exists() else None
        if folder is not None:
            break
        time.sleep(0.05)
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait()
    assert folder is not None and folder.name.startswith("plan-md-")   # the old name's
    paid = len(fake_claude.task_runs()) - before      # a1 and the killed b1
    git(work, "checkout", "--", "plan.md")             # plan.md there again: a new plan
    out = ran(work, "plan.md", "--dry-run")
    # No state of its own (only what the history says is done), none of sub/plan.md's.
    assert "no state for this plan" in out and "taken over" not in out, out
    assert _names(folder, "sub/plan.md")               # a look moves nothing
    out = ran(work, "plan.md")
    assert "no state for this plan" in out and "taken over" not in out, out
    assert not folder.exists() or not _names(folder, "sub/plan.md")
    fresh = len(fake_claude.task_runs()) - before - paid
    out = ran(work, "sub/plan.md")
    # Its own state: a1 done there, not paid again; a2 and b1 (killed) run.
    assert "no state for this plan" not in out and "1 done already" in out, out
    assert len(fake_claude.task_runs()) - before == paid + fresh + 2, out


def test_the_cost_of_a_plan_renamed_over_is_not_spent_against_its_budget(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`mv a.md b.md` while a.md's run works, b.md having run (b1 and b2 paid). b.md's older
    runs count in its totals, but they were paid for another plan: `agent-loop b.md --budget`,
    the most this plan may cost since its last --reset, stopped at once on them. Only what
    was spent on this plan (a1) counts against the budget: a2 runs."""
    work = git_project(tmp_path, PLAN)
    (work / "b.md").write_text("## B\n- [ ] b1\n  FAKE: write b1.txt 1\n"
                               "- [ ] b2\n  FAKE: write b2.txt 2\n")
    ran(work, "b.md")
    each = _costs(work, "b.md")[0] / 2     # one task's run: the fake's price is the same for each
    renamed_over_b(work)
    out = ran(work, "b.md", "--budget", f"{1.5 * each:.4f}")
    assert (work / "a2.txt").exists(), out
    assert "budget" not in out.split("agent-loop done")[0], out
    assert _costs(work, "b.md") == pytest.approx((4 * each, 4 * each))   # b1, b2, a1, a2
    status = agent_loop(work, "--status", plan="b.md").stdout
    assert f"{money(2 * each)} spent" in status, status   # a1 and a2: this plan's own
