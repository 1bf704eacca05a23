"""Ctrl+C at an exact point between two steps of the controller, the scheduler and a lane's
teardown (not at a random moment: tests/run/test_interrupts.py): the run ends with exit 130 and
one "Resume with" line, its records as they were, and everything a stop puts back put back (a
lane you locked locked again); the next run finishes the plan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, state_of
from tests.support.runner import agent_loop

# agent-loop with one function wrapped (module, qualified name): at its `nth` call in the main
# thread (of the calls whose first three arguments' repr holds `match`), SIGINT is sent to this
# process `before` or `after` the real function runs, and a mark is left that it was. Python
# runs the handler at once, in the main thread, where the wrapper is: the stop comes exactly
# there, as a Ctrl+C at that instant would. As the run leaves, the lanes' threads still alive
# are noted.
HOOKED = """
import importlib, os, signal, sys, threading
marker, module, qualname, when, nth, match = sys.argv[1:7]
del sys.argv[1:7]
owner = importlib.import_module(module)
*path, name = qualname.split(".")
for part in path:
    owner = getattr(owner, part)
real = getattr(owner, name)
calls = 0

def hooked(*args, **kwargs):
    global calls
    if threading.current_thread() is not threading.main_thread() or \
            match not in repr(args[:3]):
        return real(*args, **kwargs)
    calls += 1
    now = calls == int(nth)
    if now and when == "before":
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGINT)
    result = real(*args, **kwargs)
    if now and when == "after":
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGINT)
    return result

setattr(owner, name, hooked)
import agentloop.__main__ as entry
leave = entry._exit

def noted_exit(code):
    # The lanes' threads still alive as the run leaves: a lane the stop never waited for.
    with open(marker + ".lanes", "w") as out:
        out.write("".join(t.name + "\\n" for t in threading.enumerate()
                          if t.name.startswith("lane ")))
    leave(code)

entry._exit = noted_exit
entry.main()
"""


def plan(first: str = "", groups: tuple[int, ...] = (1,)) -> str:
    """Three groups of two tasks, each writing a file of its own; `first`: more directives for
    the first task of each of `groups` ({g}: the group's number)."""
    return "".join(f"## G{g}\n" + "".join(
        f"- task {g}.{t}\n  FAKE: write g{g}t{t}.txt {g}{t}\n"
        + (first.format(g=g) if t == 1 and g in groups else "") for t in (1, 2)) + "\n"
        for g in (1, 2, 3))


def project(tmp_path: Path, kind: str, first: str = "", groups: tuple[int, ...] = (1,)
            ) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    (work / ".gitignore").write_text(".agent-loop/\n")
    init_repo(work, kind)
    if kind == "git":
        git(work, "add", ".gitignore")
        git(work, "commit", "-qm", "ignore")
    (work / "tasks.md").write_text(plan(first, groups))
    return work


def stopped_at(work: Path, tmp_path: Path, spot: str, when: str, nth: int,
               *args: str, match: str = "", timeout: float = 60
               ) -> subprocess.CompletedProcess[str]:
    """agent-loop run in `work`, stopped at `spot` ("module:Class.method"); asserts the stop
    came there and the run ended as a stop ends: 130, one resume line, no traceback, no lane
    left running (within `timeout` seconds, or subprocess.TimeoutExpired)."""
    marker = tmp_path / "stopped"
    module, qualname = spot.split(":")
    try:
        done = subprocess.run([sys.executable, "-c", HOOKED, str(marker), module, qualname,
                               when, str(nth), match, "tasks.md", "--no-distill", *args],
                              cwd=work, env={**os.environ, "NO_COLOR": "1"},
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        said = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        pytest.fail(f"the run had not ended {timeout:g} s after it began (stopped: "
                    f"{marker.exists()}):\n{said}", pytrace=False)
    said = done.stdout + done.stderr
    assert marker.exists(), said   # the run reached the spot
    assert Path(f"{marker}.lanes").read_text() == "", said   # every lane had ended
    assert done.returncode == 130, said
    assert "Traceback" not in said, said
    assert done.stderr.count("Resume with: agent-loop tasks.md") == 1, said
    return done


def statuses(work: Path) -> list[str]:
    return [t["status"] for t in state_of(work)["tasks"]]


def locked(work: Path, lane: Path) -> str | None:
    """The reason of the lock on the worktree at `lane` (None: not locked, or not there)."""
    listed = git(work, "worktree", "list", "--porcelain").split("\n\n")
    for entry in listed:
        lines = entry.splitlines()
        if lines and lines[0] == f"worktree {lane.resolve()}":
            return next((line.removeprefix("locked").strip() for line in lines
                         if line.startswith("locked")), None)
    return None


def finished(work: Path, kind: str) -> None:
    """A run without the hook finishes the plan, finding nothing a kill would have left (the
    stop closed what it stopped), and leaves no lane but one you locked."""
    done = agent_loop(work, "--no-distill", "--vcs", kind)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "an earlier run stopped" not in done.stdout, done.stdout
    assert statuses(work) == ["completed"] * 6
    assert all((work / f"g{g}t{t}.txt").read_text() == f"{g}{t}\n"
               for g in (1, 2, 3) for t in (1, 2))
    if kind == "jj":
        assert jj(work, "workspace", "list").count("\n") == 1
    else:
        others = git(work, "worktree", "list", "--porcelain").strip().split("\n\n")[1:]
        assert all("\nlocked mine" in entry for entry in others), others


def your_locked_lane(tmp_path: Path, groups: tuple[int, ...] = (1,), name: str = "serial",
                     *args: str) -> tuple[Path, Path]:
    """A git project whose run (`args`) was stopped (Ctrl+C) in the first agent of each of
    `groups`, and whose lane `*-name` you then locked ('mine'): (the project, the lane)."""
    once = tmp_path / "once"
    work = project(tmp_path, "git", f"  FAKE: bash test -e {once}{{g}} || "
                                    f"{{{{ touch {once}{{g}}; sleep 30; }}}}\n", groups)
    # A session of its own, as a terminal gives its foreground job: Ctrl+C goes to the group.
    first = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                              "--vcs", "git", *args], cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not all(Path(f"{once}{g}").exists() for g in groups):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGINT)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 130, out + err
    lane, = (work / ".agent-loop" / "lanes").glob(f"*-{name}")
    git(work, "worktree", "lock", "--reason", "mine", str(lane))
    return work, lane


def test_a_stop_as_one_group_ends_puts_your_lane_lock_back(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The run unlocks the lane you locked to go on in it, G1 finishes there, and Ctrl+C comes
    # the instant its lane has ended, before G2 begins: the controller's closing of the lanes
    # was skipped on a stop, and the lane stayed unlocked, your lock's reason beside it.
    work, lane = your_locked_lane(tmp_path)
    done = stopped_at(work, tmp_path, "agentloop.run.scheduler:Workplaces.run_group", "after",
                      1, "--vcs", "git")
    assert "unlocked it and goes on in it" in done.stdout, done.stdout
    assert statuses(work) == ["completed"] * 2 + ["pending"] * 4
    assert locked(work, lane) == "mine", done.stdout + done.stderr
    finished(work, "git")
    assert locked(work, lane) == "mine"


@pytest.mark.parametrize("spot,when", [
    # The sweep at the run's start has taken your lock off, to go on there.
    ("agentloop.run.scheduler:sweep_workspaces", "after"),
    # The run's workplaces are open, the controller is yet to hold them.
    ("agentloop.run.scheduler:Workplaces.open", "after"),
    # Group 2 takes the one lane group 1 left, brought to the main line's tip.
    ("agentloop.vcs.git.lane:LaneGit.follow", "before"),
])
def test_a_stop_as_the_run_takes_your_lane_puts_your_lock_back(
        tmp_path: Path, fake_claude: FakeClaude, spot: str, when: str) -> None:
    work, lane = your_locked_lane(tmp_path)
    done = stopped_at(work, tmp_path, spot, when, 1, "--vcs", "git")
    assert locked(work, lane) == "mine", done.stdout + done.stderr
    finished(work, "git")
    assert locked(work, lane) == "mine"


@pytest.mark.parametrize("kind,spot,when,match,lanes", [
    # One group at a time: group 1's lane has ended, group 2's has not begun.
    *((kind, "agentloop.run.scheduler:Workplaces.run_group", "after", "", "1")
      for kind in ("git", "jj")),
    # Group 1's tasks are done and saved, the main line is yet to forget its lane's commits.
    ("git", "agentloop.vcs.git.mainline:GitMainLine.forget", "before", "", "1"),
    # Group 2 takes the one lane group 1 left, brought to the main line's tip.
    *((kind, f"agentloop.vcs.{kind}.lane:Lane{kind.title()}.follow", "before", "", "1")
      for kind in ("git", "jj")),
    # Two at a time: the first lane's thread has started, the controller is yet to know it.
    *((kind, "threading:Thread.start", "after", "lane ", "2") for kind in ("git", "jj")),
    # Two at a time: the first lane to end has been taken in, the third group starts next.
    ("git", "agentloop.run.controller:Controller._lane_ended", "after", "", "2"),
])
def test_a_stop_between_two_steps_of_the_controller_ends_as_a_stop(
        tmp_path: Path, fake_claude: FakeClaude, kind: str, spot: str, when: str, match: str,
        lanes: str) -> None:
    work = project(tmp_path, kind)
    stopped_at(work, tmp_path, spot, when, 1, "--vcs", kind, "--parallel", lanes, match=match)
    # No task left running, none begun twice; what finished is done.
    assert set(statuses(work)) <= {"completed", "pending", "interrupted"}, statuses(work)
    finished(work, kind)



def test_a_stop_before_a_lane_you_locked_is_reached_puts_your_lock_back(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Three lanes stopped in their first agents; you lock G3's. Two lanes at a time: the sweep
    # takes your lock off G3's lane to go on there, and Ctrl+C comes as the second lane starts,
    # before G3's: no lane closed G3's, and it stayed unlocked.
    work, lane = your_locked_lane(tmp_path, (1, 2, 3), "g3", "--parallel", "3")
    done = stopped_at(work, tmp_path, "threading:Thread.start", "after", 2, "--vcs", "git",
                      "--parallel", "2", match="lane ")
    assert f"lane {lane.name} was locked ('mine')" in done.stdout, done.stdout
    assert locked(work, lane) == "mine", done.stdout + done.stderr
    finished(work, "git")
    assert locked(work, lane) == "mine"


def test_a_stop_as_a_task_is_recorded_done_still_says_its_change(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # One lane at a time, the lane in the controller's thread: Ctrl+C as task 1's completion
    # is saved, before it is said. Its record said done, its change was never said: a lane
    # of its own thread (--parallel 2) hands it over, and the stop waits until it is said.
    work = project(tmp_path, "git")
    done = stopped_at(work, tmp_path, "agentloop.run.ledger:_say", "before", 1, "--vcs", "git",
                      match="Completed(")
    assert statuses(work) == ["completed"] + ["pending"] * 5
    assert done.stdout.count("1 file(s) changed") == 1, done.stdout
    finished(work, "git")


def test_a_task_done_as_a_parallel_run_stops_is_kept_and_its_hook_cut_short(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Two lanes, G2's agent at work (its first run only: G1's waits for it); Ctrl+C as G1's
    # first agent has ended, before its lane hands the task's completion over. The stop waits
    # for that lane, which completes and lands the task: its on-task hook ran inside the stop,
    # where Ctrl+C is ignored, for as long as it took (up to hook-timeout).
    once, began = tmp_path / "once", tmp_path / "began"
    work = project(tmp_path, "git", f"  FAKE: bash if [ {{g}} = 1 ]; then until test -e {once}; "
                                   f"do sleep 0.05; done; elif ! test -e {once}; then "
                                   f"touch {once}; sleep 30; fi\n", (1, 2))
    started = time.monotonic()
    stopped_at(work, tmp_path, "agentloop.run.controller:Controller._serve", "after", 1,
               "--vcs", "git", "--parallel", "2", "--on-task", f"touch {began}; sleep 60",
               match="RunEnded(", timeout=15)
    assert time.monotonic() - started < 10
    # The task its agent finished is done and landed; G2's was stopped; none began after.
    assert statuses(work) == ["completed", "pending", "interrupted"] + ["pending"] * 3
    assert (work / "g1t1.txt").read_text() == "11\n"
    assert not began.exists()   # the hook was not waited for: cut short, and said so
    assert "== stopped (Ctrl+C)" in (work / ".agent-loop" / "hooks.log").read_text()
    finished(work, "git")
