"""A stop (Ctrl+C, SIGTERM) that comes after a serial git run made a task's commit in its lane,
before the task's record names that commit, loses nothing: the record says `landing` with the
commit, and the next run lands it first, its agent not paid again. The lane's record of the
attempt is dropped as the stopped run leaves the lane; before, the task stayed `running`
(`interrupted`), the next run ran it again in the lane that already held its commit, found
nothing to commit, and called it completed while its work was on no commit of your branch.

The stop is sent by the tool to itself at one chosen instant of that span (a launcher wraps the
function that waits for a VCS command, or the one that starts a thread), so the instant is the
same on every run and every machine. The last test stops a jj run so, after each of its VCS
commands: no change nobody asked for stays in the repository."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.run.test_crash import check, ended, git_history, jj, new_repo, settle, start, subject
from tests.run.test_landing_beside import statuses
from tests.support.fake_agent import FakeClaude

# Runs agent-loop with a stop sent to itself once: right after the first VCS command whose
# arguments hold $STOP_AFTER returns (the stop then comes out of that command's wait, as one that
# came while it ran does), or after the Nth command when $STOP_AFTER is a number N, or, with
# $STOP_AFTER empty, as the first landing's thread has started (before it ran any git), or with
# "@agent", as the first agent's process has started.
LAUNCHER = """
import os, signal, threading
from agentloop.proc import commands, streamed

after, sig = os.environ["STOP_AFTER"], getattr(signal, os.environ["STOP_SIGNAL"])
fired = []

def once():
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), sig)

real_finished = commands._finished
calls = []
def _finished(child, argv, *rest):
    found = real_finished(child, argv, *rest)
    calls.append(argv)
    if after.isdigit() and len(calls) == int(after) or \
            after and not after.isdigit() and after in " ".join(argv) + " ":
        once()
    return found
commands._finished = _finished

real_streaming = streamed._start_streaming
def _start_streaming(*args):
    found = real_streaming(*args)
    if after == "@agent":
        once()
    return found
streamed._start_streaming = _start_streaming

real_start = threading.Thread.start
def start(self):
    real_start(self)
    if not after and self.name == "agent-loop landing":
        once()
threading.Thread.start = start

from agentloop.__main__ import main
main()
"""


def stopped_run(work: Path, out: Path, after: str, sig: str, *extra: str, kind: str = "git"
                ) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "PYTHONFAULTHANDLER": "1",
           "STOP_AFTER": after, "STOP_SIGNAL": sig}
    with open(out, "w") as sink:
        return subprocess.Popen([sys.executable, "-c", LAUNCHER, "tasks.md", "--vcs", kind,
                                 "--no-distill", *extra], cwd=work, env=env,
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)


# Where the stop comes, and what task 1 is once the stopped run has ended: `landing` when its
# landing had not begun (the next run lands it); once its thread had, the stop waits for it, and
# the task is completed.
POINTS = {
    # The lane's commit of the task: git made it, its finish did not return.
    "commit": (" maintenance.auto=false commit ", "SIGINT", "landing"),
    # The look at your checkout that ran beside the commit, waited for after it.
    "look": ("--no-optional-locks status --porcelain -z ", "SIGTERM", "landing"),
    # The landing's thread starts once task 2's agent has: the stop waits for the landing
    # (task 1 completed) and stops task 2's agent with its attempt.
    "beside": ("", "SIGTERM", "completed"),
    # With the agent in your checkout the commit is on your branch: the task is completed
    # (it was left interrupted, and its agent paid again to find nothing to commit).
    "checkout": (" maintenance.auto=false commit ", "SIGINT", "completed"),
    # Not a commit: the agent's process has just started. It is stopped with the attempt (its
    # agent runs again): it was left running, outlived the tool, and could write its file into
    # the lane after the attempt was rolled back, which the task's next attempt took for a file
    # there before it (on no commit then).
    "agent": ("@agent", "SIGHUP", "interrupted"),
}


@pytest.mark.parametrize("point", list(POINTS))
def test_a_stop_between_a_task_commit_and_its_record_leaves_it_to_land_first(
        tmp_path: Path, fake_claude: FakeClaude, point: str) -> None:
    after, sig, left = POINTS[point]
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    if point == "agent":  # long enough that one left running outlives the tool (settle)
        plan = work / "tasks.md"
        plan.write_text(plan.read_text().replace("  FAKE: write f01.txt",
                                                 "  FAKE: sleep 3\n  FAKE: write f01.txt"))
    out = tmp_path / "stopped.out"
    extra = ("--workplace", "checkout") if point == "checkout" else ()
    tool = stopped_run(work, out, after, sig, *extra)
    assert tool.wait(timeout=120) == 130, out.read_text()[-3000:]
    settle(tool.pid, fake_claude, "the stop", within=work)
    said = out.read_text()
    assert "Traceback" not in said, said
    beside = point == "beside"
    # (task 2's agent, stopped as it started, may not have recorded its call yet)
    assert len(fake_claude.task_runs()) in ((1, 2) if beside else (1,)) or point == "agent"
    assert statuses(work) == [left, "interrupted" if beside else "pending"], said
    again = tmp_path / "again.out"
    done = start(work, "git", again, None, "--no-distill", *extra)
    assert done.wait(timeout=120) == 0, again.read_text()[-3000:]
    paid = sum("task 01" in p for p in fake_claude.task_prompts())
    assert paid == 1 or point == "agent" and paid == 2, \
        "task 1's agent was paid again: " + again.read_text()[-3000:]
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems) + "\n" + said + again.read_text()
    ours = [d for _, d, _ in git_history(work) if d.startswith("agent-loop")]
    assert ours == [subject(1, 2), subject(2, 2)]


# Two at a time, each in a repository of its own: CI has two cores.
SWEEP_WORKERS = 2
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def stop_point(tmp_path: Path, fake_claude: FakeClaude, kind: str, at: int
               ) -> tuple[bool, list[str]]:
    """A two-task run stopped right after its VCS command number `at`, then run to its end:
    (whether it was stopped, what went wrong). git: Ctrl+C, SIGTERM or SIGHUP in turn; jj:
    Ctrl+C, and no stray change after the stop or after the next run (jj_leftovers)."""
    sig = SIGNALS[at % len(SIGNALS)] if kind == "git" else "SIGINT"
    label = f"{kind}: {sig} after VCS command {at}"
    work = tmp_path / f"{kind}-{at}"
    new_repo(work, kind, groups=1, per_group=2, pause=0)
    out = tmp_path / f"{kind}-{at}.out"
    tool = stopped_run(work, out, str(at), sig, kind=kind)
    code = ended(tool, out)
    settle(tool.pid, fake_claude, label, within=work)
    if code == 0:
        return False, []  # the run made fewer commands: it ended before the stop
    said = out.read_text()
    if code != 130 or "Traceback" in said:
        return True, [f"{label}: exit {code}: {said[-2000:]}"]
    def leftovers(when: str) -> list[str]:
        return jj_leftovers(work, f"{label}, {when}", per_group=2) if kind == "jj" else []

    problems = leftovers("after the stop")
    again = tmp_path / f"{kind}-{at}.again"
    done = start(work, kind, again, None, "--no-distill")
    if ended(done, again) != 0:
        return True, problems + [f"{label}: the run after it failed: {again.read_text()[-2000:]}"]
    return True, problems + check(work, kind, label, per_group=2) + leftovers("after the next run")


def sweep_stops(tmp_path: Path, fake_claude: FakeClaude, kind: str) -> None:
    """A stop right after each VCS command of the run in turn, two at a time, until the run
    makes fewer commands than the point: at least 12 points, and nothing wrong at any."""
    problems: list[str] = []
    stopped, at = 0, 1
    with ThreadPoolExecutor(SWEEP_WORKERS) as pool:
        while at:
            batch = list(range(at, at + SWEEP_WORKERS))
            for was, found in pool.map(lambda k: stop_point(tmp_path, fake_claude, kind, k),
                                       batch):
                stopped += was
                problems += found
                if not was:
                    at = 0  # every command of the run was a stop point
            at = at and at + SWEEP_WORKERS
    assert stopped >= 12
    assert not problems, "\n".join(problems)


def test_a_stop_right_after_any_vcs_command_of_a_git_run_loses_nothing(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Ctrl+C, SIGTERM or SIGHUP (in turn) right after each VCS command of a serial git run
    of two tasks: each task's work ends in exactly one commit of your branch, its record
    naming it. A stop right after the lane's commit left the task's work on none."""
    sweep_stops(tmp_path, fake_claude, "git")


# An empty, undescribed change that is no workspace's @: one nobody asked for, which `jj log`
# shows beside or in the line for good (jj drops such a change itself only as @ leaves it).
STRAY = 'empty() & description(exact:"") & ~working_copies() & ~root()'


def jj_leftovers(work: Path, label: str, per_group: int) -> list[str]:
    """Stray empty changes, and tasks with other than one change in the whole repository (the
    changes beside the line too: check() looks at the line)."""
    problems = []
    strays = jj(work, "log", "--no-graph", "-r", STRAY, "-T", 'change_id.short() ++ " "')
    if strays.strip():
        problems.append(f"{label}: empty, undescribed changes left: {strays.strip()}")
    firsts = jj(work, "log", "--no-graph", "-r", "all()", "-T",
                'description.first_line() ++ "\\n"').splitlines()
    for n in range(1, 3):
        if firsts.count(subject(n, per_group)) > 1:
            problems.append(f"{label}: task {n} has {firsts.count(subject(n, per_group))} "
                            "changes")
    return problems


def test_a_ctrl_c_right_after_any_jj_command_leaves_no_stray_change(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    """Ctrl+C right after each VCS command of a two-task jj run (in a colocated repository,
    `jj git init`): after the stop, and after the run that follows it, `jj log -r 'all()'`
    holds no empty, undescribed change but a working copy, and each task one change. A stop
    right after task 1's landing (`jj rebase -s @ ...`) left the lane's empty @ to the next
    run's first task, which took it for a base and landed without it: an empty change beside
    the main line for good."""
    sweep_stops(tmp_path, fake_claude, "jj")
