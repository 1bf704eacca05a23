"""--budget across K lanes (agentloop.run.budget): no task starts while what was spent plus what
the running tasks may still spend could reach it; the stop line says what was really spent and
suggests a budget that runs more tasks; a sequential run keeps its rule; the cap reaches the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.errors import BudgetReached
from agentloop.options.record import RunOptions
from agentloop.run import budget
from agentloop.run.budget import Verdict
from agentloop.state.store import Store
from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, state_of
from tests.support.runner import agent_loop


def groups(count: int, extra: str = "") -> str:
    """`count` groups of one task each, every run costing $1."""
    return "\n".join(f"## Group {g}\n- task {g}\n  FAKE: write g{g}.txt {g}\n"
                     f"  FAKE: cost 1{extra}\n" for g in range(1, count + 1))


def spent(work: Path) -> float:
    return round(sum(t.get("cost_usd", 0.0) for t in state_of(work)["tasks"]), 4)


def suggested(stderr: str) -> str:
    found = re.search(r"--budget (\d+\.\d\d)", stderr)
    assert found, stderr
    return found.group(1)


# The rule itself, over plain numbers.

def test_a_task_alone_starts_while_anything_is_left() -> None:
    assert budget.verdict(2.0, 1.99, []) is Verdict.GO
    assert budget.verdict(2.0, 2.0, []) is Verdict.STOP
    assert budget.verdict(None, 100.0, [None]) is Verdict.GO


def test_beside_running_tasks_it_counts_what_they_may_still_spend() -> None:
    assert budget.verdict(2.0, 1.0, [1.0]) is Verdict.WAIT     # 1 + 1 could reach 2
    assert budget.verdict(3.0, 1.0, [1.0]) is Verdict.GO
    assert budget.verdict(3.0, 0.0, [1.0, 1.0, 1.0]) is Verdict.WAIT
    # No task of the plan has a cost yet: nothing starts blind beside the first.
    assert budget.verdict(100.0, 0.0, [None]) is Verdict.WAIT
    assert budget.verdict(2.0, 2.5, [1.0]) is Verdict.STOP


def test_a_cap_counts_every_agent_run_one_attempt_can_make() -> None:
    plain = RunOptions(task_budget=0.5)
    assert budget.cap_of(plain, True, False) == 0.5
    assert budget.cap_of(plain, False, False) is None             # the agent cannot cap a run
    assert budget.cap_of(RunOptions(), True, False) is None       # nothing set the cap
    # Two fix rounds after failing checks; three review rounds of a reviewer and a fix each,
    # every fix held to the checks again.
    reviewed = RunOptions(task_budget=0.5, review=True, max_review_rounds=3, check_rounds=2)
    assert budget.runs_per_attempt(reviewed, checked=True) == 3 + 3 * 4
    assert budget.cap_of(reviewed, True, True) == 0.5 * 15


def test_the_suggestion_always_leaves_room_above_what_was_spent() -> None:
    assert budget.suggestion(2.0, 2.0) == 4.0
    assert budget.suggestion(8.0, 2.0) == 10.0
    assert budget.suggestion(0.0, 0.0) > 0.0
    assert budget.suggestion(2.004, 0.001) > 2.004
    # A budget of a fraction of a cent: as much again, in the four decimals budgets are said
    # in ($0.0024 of $0.0020), not a whole cent ten times the budget.
    assert budget.suggestion(0.0024, 0.002) == 0.0044
    assert budget.suggestion(0.0101, 0.005) == 0.0151


def test_the_stop_counts_what_the_running_tasks_spent_after_it() -> None:
    first = BudgetReached("budget reached before task 3: spent $2.0000 of $2.0000", 2.0, 2.0)
    assert budget.restated(first, budget.Reckoning(2.0)) is first
    later = budget.restated(first, budget.Reckoning(3.5))
    assert (later.spent, later.budget) == (3.5, 2.0)
    assert "spent $3.5000 of $2.0000" in str(later) and "$1.5000" in str(later)


# Whole runs, with the fake claude.

def test_eight_lanes_spend_two_dollars_of_a_two_dollar_budget(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(groups(8, "\n  FAKE: sleep 0.5"))
    done = agent_loop(work, "--vcs", "git", "--parallel", "8", "--no-distill", "--budget", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    # The first task ran alone (no cost known yet), the second beside nothing that could reach
    # the budget; then $2 was spent and nothing else started.
    runs = [c for c in fake_claude.calls() if "--output-format" in c["argv"]]
    assert len(runs) == 2 and spent(work) == 2.0
    assert sorted(t["status"] for t in state_of(work)["tasks"]) == ["completed"] * 2 + \
        ["pending"] * 6
    assert "waits: no task of this plan has a known cost yet" in done.stdout
    # The stop line says what was really spent, and a budget that runs more.
    assert "spent $2.0000 of $2.0000" in done.stderr
    more = suggested(done.stderr)
    assert float(more) > spent(work)
    again = agent_loop(work, "--vcs", "git", "--parallel", "8", "--no-distill", "--budget", more)
    assert again.returncode == 1, again.stdout + again.stderr
    assert sorted(t["status"] for t in state_of(work)["tasks"]).count("completed") == 4
    assert f"spent ${spent(work):.4f} of ${float(more):.4f}" in again.stderr


def test_a_lane_that_waits_for_the_first_cost_says_so(work: Path,
                                                     fake_claude: FakeClaude) -> None:
    # Nothing spent of $50: the lanes beside the first task waited, said as `what was spent
    # and what the running tasks may still spend could reach --budget $50.0000`, a reason that
    # reads false. They wait because no task has a cost yet.
    init_repo(work, "git")
    (work / "tasks.md").write_text(groups(3, "\n  FAKE: sleep 0.5"))
    done = agent_loop(work, "--vcs", "git", "--parallel", "3", "--no-distill", "--budget", "50")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "could reach" not in done.stdout, done.stdout
    assert "waits: no task of this plan has a known cost yet, and with --budget one starts at " \
        "a time until one has" in done.stdout, done.stdout


def test_the_stop_line_counts_what_the_tasks_still_running_spent(work: Path,
                                                                fake_claude: FakeClaude) -> None:
    # Group 1 runs first ($1: the costliest task so far); then two of the other three start
    # ($1 spent plus $1 reserved is under $3) and the third waits. Each costs $2, each at its
    # own pace: when the faster of the two ends, $3 is spent and the waiting lane stops the run
    # while the slower one still runs; it ends and is paid for.
    # The faster ends only once the slower has started: on a loaded machine it could end
    # before the slower's lane was made, and the budget then stopped the run before it.
    init_repo(work, "git")
    started = work.parent / "g3-started"
    pace = {2: f"bash for i in $(seq 500); do [ -e {started} ] && break; sleep 0.02; done",
            3: f"bash touch {started}\n  FAKE: pause 1.5", 4: "sleep 3"}
    later = "".join(f"## Group {g}\nDepends on: Group 1\n- task {g}\n  FAKE: write g{g}.txt {g}\n"
                    f"  FAKE: cost 2\n  FAKE: {pace[g]}\n\n" for g in (2, 3, 4))
    (work / "tasks.md").write_text("## Group 1\n- task 1\n  FAKE: write g1.txt 1\n"
                                   "  FAKE: cost 1\n\n" + later)
    done = agent_loop(work, "--vcs", "git", "--parallel", "3", "--no-distill", "--budget", "3")
    assert done.returncode == 1, done.stdout + done.stderr
    assert spent(work) == 5.0
    assert "budget reached: spent $5.0000 of $3.0000 ($2.0000 of it after that, by the work " \
        "still under way: the tasks then running" in done.stderr
    assert suggested(done.stderr) == "8.00"


def test_a_sequential_run_keeps_its_rule(work: Path, fake_claude: FakeClaude) -> None:
    # One lane starts a task while anything is left: the task that crosses the budget is the
    # last, and the line names the task that did not start.
    (work / "tasks.md").write_text(groups(4))
    done = agent_loop(work, "--vcs", "none", "--no-distill", "--budget", "1.5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2 + ["pending"] * 2
    assert "budget reached before task 3: spent $2.0000 of $1.5000" in done.stderr
    assert suggested(done.stderr) == "3.50"


def test_the_task_budget_reaches_every_lanes_claude_as_its_cap(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(groups(3))
    done = agent_loop(work, "--vcs", "git", "--parallel", "3", "--no-distill", "--budget", "10",
                      "--task-budget", "1.25")
    assert done.returncode == 0, done.stdout + done.stderr
    runs = [c["argv"] for c in fake_claude.calls() if "--output-format" in c["argv"]]
    assert len(runs) == 3
    assert all(argv[argv.index("--max-budget-usd") + 1] == "1.25" for argv in runs)


@pytest.mark.parametrize(("extra", "said"), [
    ((), "passed by at most one task's cost plus, for each other lane (up to 3)"),
    (("--task-budget", "0.5"), "it is passed by at most $0.5000"),
])
def test_dry_run_says_by_how_much_the_budget_can_be_passed(work: Path, fake_claude: FakeClaude,
                                                           extra: tuple[str, ...],
                                                           said: str) -> None:
    (work / "tasks.md").write_text(groups(4))
    done = agent_loop(work, "--vcs", "none", "--dry-run", "--parallel", "4", "--budget", "3",
                      *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("budget: "))
    assert "$3.0000 for this plan" in line and said in line, line


def test_codex_cannot_cap_a_run_so_its_bound_is_said_in_words(work: Path) -> None:
    (work / "tasks.md").write_text(groups(2))
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none",
                           "--dry-run", "--agent", "codex", "--parallel", "2", "--budget", "3",
                           "--task-budget", "0.5"], cwd=work, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    if done.returncode != 0:  # an agent whose cost cannot be known may refuse --budget
        assert "budget" in done.stderr, done.stderr
        return
    line = next(x for x in done.stdout.splitlines() if x.startswith("budget: "))
    assert "nothing caps (this agent cannot hold a run to --task-budget)" in line, line
    assert "(up to 1)" in line, line


def test_the_real_claude_takes_the_cap(tmp_path: Path, fake_api, claude_bin: Path) -> None:
    from tests.support.claude_cli import real_project
    from tests.support.repos import tasks_of

    work, env = real_project(tmp_path, fake_api, claude_bin)
    done = agent_loop(work, "--vcs", "none", "--budget", "50", "--task-budget", "5", "--no-distill",
                      env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    logs = sorted((work / ".agent-loop" / "logs").glob("*.log"))
    assert logs and all("--max-budget-usd 5" in log.read_text() for log in logs)


def test_dry_run_warns_of_a_task_budget_below_what_a_run_has_cost(work: Path,
                                                                  fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text(groups(2))
    first = agent_loop(work, "--vcs", "none", "--no-distill", "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    done = agent_loop(work, "--vcs", "none", "--dry-run", "--budget", "5", "--task-budget", "0.5")
    line = next(x for x in done.stdout.splitlines() if x.startswith("budget: "))
    assert "$1.0000 spent so far" in line
    assert "warning: --task-budget $0.5000 is below what one agent run of this plan has cost " \
        "($1.0000)" in line, line
    enough = agent_loop(work, "--vcs", "none", "--dry-run", "--budget", "5", "--task-budget", "1")
    assert "warning" not in next(x for x in enough.stdout.splitlines() if x.startswith("budget: "))


# A Ctrl+C while lanes wait on the budget, and the run after it.

def agent_runs(fake_claude: FakeClaude) -> int:
    """The tasks' agent runs (the helper calls, such as the retry advisor's, have --tools)."""
    return len([c for c in fake_claude.calls()
                if "--output-format" in c["argv"] and "--tools" not in c["argv"]])


def stopped_while_lanes_wait(work: Path, fake_claude: FakeClaude) -> Path:
    """Four groups of a $1 task each under --budget 2.5 and --parallel 4, the first task's agent
    held until the file returned exists (20 s at most): no cost is known yet, so the other three
    lanes wait on the budget; a Ctrl+C then. Checks the stop; returns the file that lets agents
    finish."""
    import os
    import signal
    import threading
    import time

    init_repo(work, "git")
    go = work.parent / "go"
    (work / "tasks.md").write_text(groups(4, f"\n  FAKE: bash for i in $(seq 400); do [ -e {go} ] "
                                              "&& break; sleep 0.05; done"))
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--parallel", "4", "--no-distill", "--budget", "2.5"], cwd=work,
                             text=True, env={**os.environ, "NO_COLOR": "1"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
    # Read as it comes: the Ctrl+C waits for the three other lanes to say they wait on the
    # budget (a fixed sleep was too short on a loaded machine).
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(child.stdout.readline, "")),
                              daemon=True)
    reader.start()
    waits = "waits: no task of this plan has a known cost yet"
    deadline = time.monotonic() + 60
    while agent_runs(fake_claude) < 1 or sum(waits in line for line in lines) < 3:
        assert time.monotonic() < deadline, ("the lanes never waited", lines)
        time.sleep(0.05)
    time.sleep(1.0)  # the first task's run recorded as running, well after its agent began
    child.send_signal(signal.SIGINT)
    err = child.communicate(timeout=60)[1]
    reader.join(timeout=10)
    out = "".join(lines)
    assert child.returncode == 130, out + err
    assert out.count(waits) == 3
    return go


def test_no_agent_starts_after_a_ctrl_c_in_a_lane_waiting_on_the_budget(
        work: Path, fake_claude: FakeClaude) -> None:
    # The stopped agent gives its reservation back, which wakes a waiting lane: the budget then
    # said go and that lane started an agent after the Ctrl+C (then killed it, its cost unknown).
    stopped_while_lanes_wait(work, fake_claude)
    assert agent_runs(fake_claude) == 1
    # Whichever lane got the first agent (four lanes start in any order): that task alone.
    tasks = state_of(work)["tasks"]
    stopped = [t for t in tasks if t["status"] == "interrupted"]
    assert len(stopped) == 1, tasks
    assert all(not t["history"] for t in tasks if t is not stopped[0]), tasks


def test_a_run_of_unknown_cost_counts_as_one_of_known_cost(work: Path,
                                                          fake_claude: FakeClaude) -> None:
    # The interrupted run reported no cost. Counted as nothing, it made the re-run (its
    # --budget 2.5 kept by the state) start all four lanes at once: $4 spent of $2.50.
    go = stopped_while_lanes_wait(work, fake_claude)
    go.write_text("")
    again = agent_loop(work, "--vcs", "git", "--parallel", "4", "--no-distill")
    assert again.returncode == 1, again.stdout + again.stderr
    # Task 1 again, alone: no cost known. Then $1 spent plus the interrupted run counted as $1
    # leaves room for one task, alone; after it nothing starts.
    assert agent_runs(fake_claude) == 1 + 2
    assert spent(work) == 2.0
    assert "budget reached before task" in again.stderr
    assert "spent $2.0000, with 1 agent run of unknown cost counted as $1.0000 (the costliest " \
        "run of known cost): $3.0000 of $2.5000" in again.stderr, again.stderr


def test_a_failed_task_whose_retry_the_budget_holds_is_said_so(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    # Its first run fails and spends the budget: no retry starts. The task was left
    # "interrupted" (as if stopped midway, its paid attempt uncounted) with no word of why.
    init_repo(work, "git")
    (work / "tasks.md").write_text("## Group 1\n- task 1\n  FAKE: write g1.txt 1\n"
                                   "  FAKE: cost 0.5\n  FAKE: fail 1\n")
    done = agent_loop(work, "--vcs", "git", "--budget", "0.5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert agent_runs(fake_claude) == 1
    assert "task 1 failed (simulated failure) and is held: the budget ran out before its " \
        "retry; it runs again on the next run" in done.stdout, done.stdout
    assert "agent-loop stopped: 1 pending" in done.stdout
    task = state_of(work)["tasks"][0]
    assert (task["status"], task["attempts"]) == ("pending", 1)
    assert task["error"] == "simulated failure; held: the budget ran out before its retry"
    status = agent_loop(work, "--status")
    assert "error: simulated failure; held: the budget ran out before its retry" in status.stdout


def test_a_run_a_kill_left_open_counts_before_any_lane_starts(work: Path,
                                                              fake_claude: FakeClaude) -> None:
    # agent-loop killed (-9) while task 3's agent ran; that agent finished all the same, paid.
    # The re-run counted the killed run only once task 3's lane settled it, after task 4's lane
    # had asked the budget: $2 spent and one run of unknown cost ($1) is past $2.50, yet task 4
    # started, $4 spent of a $2.50 budget. Counted from the start, nothing starts.
    import os
    import signal
    import time

    init_repo(work, "git")
    go, out = work.parent / "go", work.parent / "out"
    hold = f"\n  FAKE: bash for i in $(seq 400); do [ -e {go} ] && break; sleep 0.05; done"
    (work / "tasks.md").write_text("\n".join(
        f"## Group {g}\n- task {g}\n  FAKE: write g{g}.txt {g}\n  FAKE: cost 1"
        f"{hold if g >= 3 else ''}\n" for g in range(1, 5)))
    with out.open("w") as log:
        child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                                  "--parallel", "2", "--no-distill", "--budget", "2.5"], cwd=work,
                                 env={**os.environ, "NO_COLOR": "1"}, stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
    deadline = time.monotonic() + 60
    # Killed once tasks 1 and 2 are saved as done and task 3's run as open, its agent started:
    # "[Group 3] claude: running" can come before those saves (task 1's lane may still be
    # landing it), and a fixed wait after that line was too short on a loaded machine.
    def killed_here() -> bool:
        saved = Store(work).load()
        return "[Group 3] claude: running" in out.read_text() and saved is not None and \
            [t.status for t in saved.tasks] == ["completed", "completed", "running", "pending"] \
            and bool(saved.tasks[2].history) and saved.tasks[2].history[-1].outcome == "running"

    while not killed_here():
        assert time.monotonic() < deadline and child.poll() is None, out.read_text()
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)  # agent-loop only: its agent runs on and is paid
    child.wait(timeout=30)
    go.write_text("")
    time.sleep(1.0)  # the orphaned agent sees the file and ends
    saved = Store(work).load()
    assert saved is not None and [t.status for t in saved.tasks] == \
        ["completed", "completed", "running", "pending"]
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--budget", "2.5")
    assert again.returncode == 1, again.stdout + again.stderr
    assert agent_runs(fake_claude) == 3, again.stdout
    assert "budget reached before task" in again.stderr
    assert "spent $2.0000, with 1 agent run of unknown cost counted as $1.0000 (the costliest " \
        "run of known cost): $3.0000 of $2.5000" in again.stderr, again.stderr


@pytest.mark.parametrize("since", ["ticked", "removed"])
def test_a_run_a_kill_left_open_on_a_task_no_lane_reaches_is_closed_and_counted_once(
        work: Path, fake_claude: FakeClaude, since: str) -> None:
    # A kill -9 left task 2's agent run open; the task was then ticked by hand (or removed
    # from the plan), so no lane settles that run. Ticked, it stayed open for good, counted
    # as left open by every later run; removed, it counted nothing at all: task 4 started on
    # $2 spent and a paid run of unknown cost, past the $2.50.
    from agentloop.state.schema import Attempt

    init_repo(work, "git")
    (work / "tasks.md").write_text(groups(4).replace("- task", "- [ ] task"))
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    store = Store(work)
    state = store.load()
    assert state is not None
    killed = state.tasks[1]
    killed.status, killed.attempts = "running", 1
    killed.history.append(Attempt(number=1, started_at="2026-01-01T00:00:00+00:00",
                                  log=".agent-loop/logs/002-group-2--task-2.log"))
    store.save(state)
    plan = (work / "tasks.md").read_text()
    block = plan[plan.index("## Group 2"):plan.index("## Group 3")]
    (work / "tasks.md").write_text(plan.replace("- [ ] task 2", "- [x] task 2") if since == "ticked"
                                   else plan.replace(block, ""))
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--budget", "2.5")
    assert again.returncode == 1, again.stdout + again.stderr
    assert agent_runs(fake_claude) == 2, again.stdout  # task 1, then task 3 alone
    assert "spent $2.0000, with 1 agent run of unknown cost counted as $1.0000 (the costliest " \
        "run of known cost): $3.0000 of $2.5000" in again.stderr, again.stderr
    saved = Store(work).load()
    assert saved is not None
    runs = [a for t in saved.tasks for a in t.history] + list(saved.retired)
    assert not [a for a in runs if a.finished_at is None], runs  # no run stays open
    # Closed once: the run after counts it the same, once.
    later = agent_loop(work, "--vcs", "git", "--no-distill", "--budget", "2.5")
    assert later.returncode == 1 and agent_runs(fake_claude) == 2, later.stdout + later.stderr
    assert "with 1 agent run of unknown cost" in later.stderr, later.stderr


def test_a_budget_given_to_a_run_stopped_before_its_first_save_is_kept(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Ctrl+C while the run looked at the checkout, before it first saved the plan's state
    # (the first agent starts after that save): the line said
    # "Resume with: agent-loop tasks.md --budget 2.5", yet a re-run without --budget had none
    # and spent $6 on six $1 tasks.
    import os
    import shutil
    import signal
    import time

    init_repo(work, "git")
    (work / "tasks.md").write_text(groups(2))
    shims, marker = tmp_path / "shims", tmp_path / "adding"
    shims.mkdir()
    real = shutil.which("git")
    (shims / "git").write_text(
        f'#!/bin/sh\ncase "$*" in *"status --porcelain=v2"*) touch "{marker}"; sleep 4;; esac\n'
        f'exec "{real}" "$@"\n')
    (shims / "git").chmod(0o755)
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--no-distill", "--budget", "2.5"], cwd=work,
                             env={**os.environ, "NO_COLOR": "1",
                                  "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    # The look at the checkout starts with the run; its answer is waited for once the run holds
    # its lock and has read the plan and the state (a second is plenty for those).
    while not (marker.exists() and (work / ".agent-loop" / "run.lock").exists()):
        assert time.monotonic() < deadline and child.poll() is None, child.communicate()
        time.sleep(0.05)
    time.sleep(1.0)
    os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, out + err
    assert agent_runs(fake_claude) == 0
    assert not (work / ".agent-loop" / "lanes").exists()  # stopped before the first save
    status = agent_loop(work, "--status")
    assert "budget: $2.5000, the most this plan may cost" in status.stdout, status.stdout


@pytest.mark.parametrize("end", ["crash", "cut"])
def test_an_agent_that_dies_before_its_result_counts_as_a_run_of_unknown_cost(
        work: Path, fake_claude: FakeClaude, end: str) -> None:
    """An agent that died after it began (killed mid-run: OOM, a crash; or its result line cut
    off) reports no cost. It was recorded as having cost exactly $0 (known): the closing line
    said "cost $1.0000", not a floor, and --budget 1.5 let task 3 start after task 1's $1 and
    task 2's paid but unreported run, where an interrupted run counts as the costliest."""
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt 1\n  FAKE: cost 1\n"
                                   f"- two\n  FAKE: write b.txt 2\n  FAKE: {end}\n"
                                   "- three\n  FAKE: write c.txt 3\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1",
                      "--budget", "1.5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert agent_runs(fake_claude) == 2
    assert "cost $1.0000 or more (not every run's cost is known)" in done.stdout, done.stdout
    assert "budget reached before task 3" in done.stderr, done.stderr
    status = agent_loop(work, "--status")
    assert "cost $1.0000 or more" in status.stdout, status.stdout
