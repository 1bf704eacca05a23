"""A serial git run in a lane puts each task's commit on your branch (a fast-forward of your
checkout) beside the next task's agent, not before it: the task is `landing` until then, and a
stop at any moment, a refusal by your checkout, or a kill leaves nothing lost, nothing landed
twice or out of order, and no agent paid again.

The landing is held by a `git` on PATH that waits before the first `merge --ff-only` (what the
test needs done meanwhile is done while it waits), never by sleeps of the tool's own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloop.state.store import Store
from tests.run.test_crash import check, git_history, new_repo, settle, start, subject
from tests.support.fake_agent import FakeClaude

# Holds the first `merge --ff-only` until $HOLD_RELEASE exists (60 s at most), having touched
# $HOLD_MARK; then runs the real git.
HOLDING_GIT = """#!/bin/sh
case " $* " in *" merge --ff-only "*)
    if [ ! -e "$HOLD_MARK" ]; then
        touch "$HOLD_MARK"
        n=0
        while [ ! -e "$HOLD_RELEASE" ] && [ $n -lt 3000 ]; do sleep 0.02; n=$((n + 1)); done
    fi ;;
esac
exec "$HOLD_REAL" "$@"
"""


def holding(tmp_path: Path, directives: dict[str, list[str]] | None = None
            ) -> tuple[dict[str, str], Path, Path]:
    """The environment of a run whose first landing waits; the files it marks and waits for."""
    folder = tmp_path / "holding-git"
    folder.mkdir()
    (folder / "git").write_text(HOLDING_GIT)
    (folder / "git").chmod(0o755)
    mark, release = tmp_path / "landing-began", tmp_path / "landing-released"
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
           "HOLD_REAL": str(shutil.which("git")), "HOLD_MARK": str(mark),
           "HOLD_RELEASE": str(release)}
    if directives:
        slow = tmp_path / "slow.json"
        slow.write_text(json.dumps(directives))
        env["FAKE_CLAUDE_DIRECTIVES"] = str(slow)
    return env, mark, release


def until(what: str, done: object, tool: subprocess.Popen[bytes], out: Path,
          seconds: float = 60) -> None:
    """Wait (polling) until `done()` holds while the tool runs."""
    deadline = time.monotonic() + seconds
    while not done():  # type: ignore[operator]
        assert tool.poll() is None, f"the run ended before {what}: " + out.read_text()[-2000:]
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.01)


def statuses(work: Path) -> list[str]:
    from agentloop.state.store import Store

    state = Store(work).load()
    assert state is not None
    return [str(t.status) for t in state.tasks]


def status_text(work: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--status"], cwd=work,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def rerun_pays_task_one_once(work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """A plain re-run ends well, one commit a task, task 1's agent paid only the first time."""
    again = tmp_path / "again.out"
    done = start(work, "git", again, None, "--no-distill")
    assert done.wait(timeout=120) == 0, again.read_text()[-2000:]
    assert sum("task 01" in p for p in fake_claude.task_prompts()) == 1, "task 1's agent again"
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems)


def stalled_beside_the_next_agent(tmp_path: Path, fake_claude: FakeClaude
                                  ) -> tuple[Path, subprocess.Popen[bytes], Path, Path]:
    """A two-task git run whose first landing stalls, once task 2's agent (asleep for a
    minute) runs beside it; the file that lets the landing go on."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2)
    env, mark, release = holding(tmp_path, {"task 02": ["FAKE: sleep 60"]})
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill")
    until("task 1's landing", mark.exists, tool, out)
    until("task 2's agent beside task 1's landing",
          lambda: len(fake_claude.task_runs()) >= 2, tool, out, seconds=10)
    return work, tool, out, release


def test_a_kill_while_a_landing_stalls_beside_the_next_agent_pays_no_agent_again(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work, tool, out, _ = stalled_beside_the_next_agent(tmp_path, fake_claude)
    # --status while it lands: the task is `landing`, its commit named.
    shown = status_text(work)
    assert "landing" in shown.splitlines()[0], shown
    line = next(t for t in shown.splitlines() if t.strip().startswith("1 "))
    assert line.split()[1] == "landing", shown
    os.killpg(tool.pid, signal.SIGKILL)  # the tool and the stalled git with it
    tool.wait()
    settle(tool.pid, fake_claude, "the kill", within=work)
    assert statuses(work) == ["landing", "running"]
    rerun_pays_task_one_once(work, tmp_path, fake_claude)
    # Your branch holds the tasks' commits in task order, and the checkout their files.
    ours = [d for _, d, _ in git_history(work) if d.startswith("agent-loop")]
    assert ours == [subject(1, 2), subject(2, 2)]
    assert (work / "f01.txt").read_text() == "content 1\n"
    assert (work / "f02.txt").read_text() == "content 2\n"


def test_ctrl_c_while_a_landing_runs_beside_the_agent_lands_it_then_stops(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Ctrl+C stops task 2's agent at once; git, in a session of its own, is let finish (as
    any git command a Ctrl+C comes in), and the task it landed is completed before the run
    stops; task 2 runs again on the next run, task 1's agent is not paid again."""
    work, tool, out, release = stalled_beside_the_next_agent(tmp_path, fake_claude)
    os.killpg(tool.pid, signal.SIGINT)  # Ctrl+C: the terminal's whole process group
    until("task 2 stopped", lambda: statuses(work)[1] == "interrupted", tool, out)
    release.touch()
    assert tool.wait(timeout=60) == 130, out.read_text()[-2000:]
    settle(tool.pid, fake_claude, "Ctrl+C", within=work)
    said = out.read_text()
    assert "Traceback" not in said, said
    assert statuses(work) == ["completed", "interrupted"], said
    assert (work / "f01.txt").read_text() == "content 1\n"
    rerun_pays_task_one_once(work, tmp_path, fake_claude)


def test_ctrl_c_while_waiting_for_a_landing_still_waits_for_it(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Task 2's agent is done and the run waits for task 1's landing when Ctrl+C comes: the
    run still waits for that git before it stops (a wait Ctrl+C cut short once let the run end
    with git still landing), and task 1 is completed."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    env, mark, release = holding(tmp_path)
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill")
    until("task 1's landing", mark.exists, tool, out)

    def agent_two_ended() -> bool:
        from agentloop.state.store import Store

        state = Store(work).load()
        return state is not None and any(a.exit_code is not None
                                         for a in state.tasks[1].history)
    until("task 2's agent's end", agent_two_ended, tool, out)
    os.killpg(tool.pid, signal.SIGINT)
    try:
        code = tool.wait(timeout=1)
    except subprocess.TimeoutExpired:
        code = None
    assert code is None, "the run ended while its landing's git still ran: " + \
        out.read_text()[-2000:]
    release.touch()
    assert tool.wait(timeout=60) == 130, out.read_text()[-2000:]
    assert statuses(work)[0] == "completed", out.read_text()[-2000:]
    # Task 2's finished work was kept: the next run brings it back without its agent (left
    # running, the next run's recovery dropped it and paid its agent again).
    again = tmp_path / "again.out"
    done = start(work, "git", again, None, "--no-distill")
    assert done.wait(timeout=120) == 0, again.read_text()[-2000:]
    assert sum("task 02" in p for p in fake_claude.task_prompts()) == 1, \
        "task 2's agent again: " + again.read_text()[-2000:]
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems)


def test_your_edit_arriving_during_the_landing_holds_it_and_sets_the_next_task_aside(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Your own file appears where task 1's commit puts one while its landing runs beside task
    2's agent: the fast-forward refuses, task 1 then waits for you as any landing does and is
    held after the lane wait; task 2, whose agent had finished, is set aside (its work kept),
    never landed before task 1. Once you move your file, the plain re-run lands task 1 and
    brings task 2's work back, paying neither agent again."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    env, mark, release = holding(tmp_path)
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill", "--lane-wait", "1s")
    until("task 1's landing", mark.exists, tool, out)
    (work / "f01.txt").write_text("mine\n")  # in the way of the task's file of that name
    release.touch()
    assert tool.wait(timeout=120) == 4, out.read_text()[-3000:]
    said = out.read_text()
    assert "did not land as itself" in said and "held" in said, said
    assert statuses(work) == ["held", "interrupted"]
    assert (work / "f01.txt").read_text() == "mine\n"  # yours, as you left it
    assert not (work / "f02.txt").exists()  # task 2 never landed before task 1
    assert not any(d.startswith("agent-loop") for _, d, _ in git_history(work))
    calls = len(fake_claude.task_runs())
    (work / "f01.txt").rename(tmp_path / "mine.txt")  # you move yours away
    again = tmp_path / "again.out"
    done = start(work, "git", again, None, "--no-distill")
    assert done.wait(timeout=120) == 0, again.read_text()[-2000:]
    assert len(fake_claude.task_runs()) == calls, "an agent was paid again"
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems)
    ours = [d for _, d, _ in git_history(work) if d.startswith("agent-loop")]
    assert ours == [subject(1, 2), subject(2, 2)]


def test_a_task_is_completed_once_landed_while_the_next_agent_still_runs(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Task 1's commit lands beside task 2's agent, which says nothing for a minute: task 1 is
    completed, and its box ticked, as soon as its landing has ended, not once that agent ends
    (a silent agent too: the wait for its output wakes on a timer)."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    plan = work / "tasks.md"
    plan.write_text(plan.read_text().replace("- task", "- [ ] task"))
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"task 02": ["FAKE: sleep 60"]}))
    env = {**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(slow)}
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill", "--tick-boxes")
    state = Store(work).state_path
    until("task 1's completion", lambda: state.exists() and statuses(work)[0] == "completed",
          tool, out, seconds=30)
    until("task 2's agent", lambda: len(fake_claude.task_runs()) == 2, tool, out, seconds=10)
    assert statuses(work) == ["completed", "running"], out.read_text()[-2000:]
    # Ticked right after its record is saved (the landing now starts once task 2's agent has,
    # and that agent may be seen to run first); long before that agent's minute is up.
    until("task 1's box", lambda: "- [x] task 01" in plan.read_text(), tool, out, seconds=10)
    assert "- [ ] task 02" in plan.read_text()
    assert (work / "f01.txt").read_text() == "content 1\n"
    os.killpg(tool.pid, signal.SIGINT)
    assert tool.wait(timeout=60) == 130, out.read_text()[-2000:]
    settle(tool.pid, fake_claude, "Ctrl+C", within=work)
    assert statuses(work) == ["completed", "interrupted"]


@pytest.mark.parametrize("said, code, status", [
    ("FAKE: say TASK_BLOCKED: needs a person", 4, "blocked"),
    ("FAKE: say AGENT_LOOP_ERROR: boom", 1, None),
])
def test_a_next_agent_that_stopped_is_not_paid_again_when_the_landing_goes_the_long_way(
        tmp_path: Path, fake_claude: FakeClaude, said: str, code: int, status: str | None
        ) -> None:
    """You commit while task 1's landing runs beside task 2's agent, so the fast-forward
    refuses and task 1 lands the long way (a copy on your commit); task 2's agent said it was
    blocked, or a fatal error: that answer stands, and its agent is not run again (it was set
    aside as unfinished work and paid a second time)."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    plan = (work / "tasks.md").read_text().splitlines(keepends=True)
    second = next(i for i, line in enumerate(plan) if "task 02" in line.lower())
    plan.insert(second + 1, f"  {said}\n")
    (work / "tasks.md").write_text("".join(plan))
    env, mark, release = holding(tmp_path)
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill")
    until("task 1's landing", mark.exists, tool, out)
    (work / "mine.txt").write_text("mine\n")
    subprocess.run(["git", "add", "mine.txt"], cwd=work, check=True)
    subprocess.run(["git", "commit", "-qm", "my own commit"], cwd=work, check=True)
    until("task 2's agent", lambda: len(fake_claude.task_runs()) >= 2, tool, out)
    release.touch()
    assert tool.wait(timeout=120) == code, out.read_text()[-3000:]
    assert len(fake_claude.task_runs()) == 2, "task 2's agent was paid again: " + \
        out.read_text()[-3000:]
    found = statuses(work)
    assert found[0] == "completed"
    if status is not None:
        assert found[1] == status
    ours = [d for _, d, _ in git_history(work)]
    assert "my own commit" in ours


# The tool, noting the name of every thread it starts in $THREADS_SEEN.
NOTING_THREADS = """
import os, threading
real = threading.Thread.start
def start(self):
    with open(os.environ["THREADS_SEEN"], "a") as seen:
        seen.write(self.name + "\\n")
    real(self)
threading.Thread.start = start
from agentloop.__main__ import main
main()
"""


@pytest.mark.parametrize("extra, beside", [((), True), (("--check", "true"), False)])
def test_no_landing_beside_with_checks_whose_fix_runs_would_be_paid_again(
        tmp_path: Path, fake_claude: FakeClaude, extra: tuple[str, ...], beside: bool) -> None:
    """A task whose landing goes the long way after all sets the next task's finished attempt
    aside, to run again: its checks' fix runs (agents) and its reviewer would be paid twice.
    With checks, a review or the repository's hooks, every landing is made before the next
    task begins."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    seen = tmp_path / "threads"
    done = subprocess.run([sys.executable, "-c", NOTING_THREADS, "tasks.md", "--vcs", "git",
                           "--no-distill", *extra], cwd=work,
                          env={**os.environ, "THREADS_SEEN": str(seen), "NO_COLOR": "1"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("agent-loop landing" in seen.read_text().split("\n")) is beside
    assert statuses(work) == ["completed", "completed"]


def test_the_landings_beside_of_a_run_share_one_thread(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    """Each task's landing beside the next agent started a thread of its own: a thread's
    start every task (its clone and stack, and the main thread waiting for it to run, GIL and
    all) right as that agent starts, over a millisecond on a busy machine. The run's
    landings now share one thread, started with the first."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=4, pause=0)
    seen = tmp_path / "threads"
    done = subprocess.run([sys.executable, "-c", NOTING_THREADS, "tasks.md", "--vcs", "git",
                           "--no-distill"], cwd=work,
                          env={**os.environ, "THREADS_SEEN": str(seen), "NO_COLOR": "1"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen.read_text().split("\n").count("agent-loop landing") == 1
    assert statuses(work) == ["completed"] * 4
    # Every task landed, in the plan's order, each its own commit.
    assert [c[1] for c in git_history(work)[-4:]] == [subject(n, 4) for n in range(1, 5)]


# As HOLDING_GIT, and once the held `merge --ff-only` has ended, touches $HOLD_DONE.
HOLDING_GIT_DONE = """#!/bin/sh
case " $* " in *" merge --ff-only "*)
    if [ ! -e "$HOLD_MARK" ]; then
        touch "$HOLD_MARK"
        n=0
        while [ ! -e "$HOLD_RELEASE" ] && [ $n -lt 3000 ]; do sleep 0.02; n=$((n + 1)); done
        "$HOLD_REAL" "$@"; code=$?
        touch "$HOLD_DONE"
        exit $code
    fi ;;
esac
exec "$HOLD_REAL" "$@"
"""


# Holds `lock` open, as your git tool does while it works, until `release` is made; then lets go.
LOCK_HOLDER = """
import os, sys, time
lock, release = sys.argv[1], sys.argv[2]
with open(lock, "x"):
    while not os.path.exists(release):
        time.sleep(0.01)
    os.unlink(lock)
"""


def test_a_lock_your_own_git_held_a_moment_is_waited_for_and_the_task_lands_as_itself(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Your git tool (an editor's git panel) holds .git/index.lock just while task 1's
    fast-forward runs beside task 2's agent, and lets go of it a moment later: the refused
    fast-forward is run again once the lock goes (agentloop.vcs.git.held_lock), and task 1
    lands as itself. Nothing is said of a stopped run or a lock, and nothing is paid twice.
    (Before the git door waited, task 1 landed the longer way, task 2's work set aside; and a
    plain file left as a lock could be looked at before or after it went, either way.)"""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    env, mark, release = holding(tmp_path, {"task 02": ["FAKE: sleep 5"]})
    (tmp_path / "holding-git" / "git").write_text(HOLDING_GIT_DONE)
    finished = tmp_path / "landing-ended"
    env["HOLD_DONE"] = str(finished)
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill")
    until("task 1's landing", mark.exists, tool, out)
    lock = work / ".git" / "index.lock"
    let_go = tmp_path / "let-go"
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(lock), str(let_go)])
    try:
        until("your git's lock", lock.exists, tool, out)
        release.touch()
        until("task 1's fast-forward's end", finished.exists, tool, out)
        time.sleep(0.3)   # a moment of your git's: the door waits it out, whenever it looks
    finally:
        let_go.touch()
        holder.wait(timeout=30)
    assert tool.wait(timeout=120) == 0, out.read_text()[-3000:]
    said = out.read_text()
    assert "did not land as itself" not in said, said
    assert "index.lock" not in said and "before the last run was stopped" not in said, said
    assert statuses(work) == ["completed", "completed"]
    assert len(fake_claude.task_runs()) == 2
    assert [c[1] for c in git_history(work)[-2:]] == [subject(n, 2) for n in (1, 2)]
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems)
