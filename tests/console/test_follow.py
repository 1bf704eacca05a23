"""`--status --follow`: the newest run's events as they come, until that run ends."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.run.test_agent_commits import killed_when_flagged, start
from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo
from tests.support.runner import agent_loop


def _agent_that_sleeps(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose one task's agent writes its pids into `flags/pids`, then sleeps a
    minute: a run to follow (or kill) while it works. The repository and the flags folder."""
    flags = tmp_path / "flags"
    flags.mkdir()
    work = make_repo(tmp_path / "work", files={
        "README.md": "hi\n",
        "tasks.md": f"- [ ] a1\n  FAKE: bash echo $PPID $$ > {flags}/pids.tmp"
                    f" && mv {flags}/pids.tmp {flags}/pids && exec sleep 60\n"})
    return work, flags


def test_follow_of_a_run_killed_midway_ends_in_one_line(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    """A run killed (SIGKILL, the OOM killer) writes no RunFinished: `--status --follow` showed
    its `claude: running…` and then waited for ever, where `--status` says `interrupted`."""
    work, flags = _agent_that_sleeps(tmp_path)
    killed_when_flagged(start(work, "checkout"), flags)
    done = agent_loop(work, "--status", "--follow", timeout=30)
    assert "claude: running" in done.stdout, done.stdout
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "ended without finishing" in lines[0] and "agent-loop tasks.md --status" in lines[0]


def test_follow_ends_soon_after_its_reader_left(tmp_path: Path,
                                                fake_claude: FakeClaude) -> None:
    """`agent-loop tasks.md --status --follow | head -1`: the follower went on, writing to no
    one, until the run it followed ended (hours, for a long plan), the pipeline with it."""
    import os
    import subprocess
    import sys
    import time

    work, flags = _agent_that_sleeps(tmp_path)
    run = start(work, "checkout")
    try:
        deadline = time.monotonic() + 60
        while not (flags / "pids").exists():
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        follower = subprocess.Popen(
            [sys.executable, "-m", "agentloop", "tasks.md", "--status", "--follow"], cwd=work,
            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert follower.stdout is not None
        assert follower.stdout.readline()
        follower.stdout.close()   # `head -1` has its line
        try:
            follower.wait(timeout=10)
        finally:
            follower.kill()
        assert run.poll() is None   # the run itself goes on
    finally:
        killed_when_flagged(run, flags)


def test_follow_of_a_plan_never_run_says_so(tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`--status --follow` of a plan no run has started waited for ever for its first event,
    saying nothing; a rehearsal (its own store) is no run of the plan either."""
    work = make_repo(tmp_path / "work", plan="- [ ] a1\n")
    done = agent_loop(work, "--status", "--follow", timeout=15)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1 and done.stdout == "", done.stderr
    assert "tasks.md has not been run (no state)" in lines[0], lines
    assert "`agent-loop tasks.md` runs it" in lines[0], lines
    assert agent_loop(work, "--rehearse").returncode == 0
    again = agent_loop(work, "--status", "--follow", timeout=15)
    assert again.returncode == 1 and again.stderr == done.stderr, again.stderr
    assert not fake_claude.calls()
    # Run once and finished: its events, to its summary, and exit 0.
    assert agent_loop(work).returncode == 0
    after = agent_loop(work, "--status", "--follow", timeout=15)
    assert after.returncode == 0 and "agent-loop done: 1 completed" in after.stdout, after


def test_follow_exits_as_the_run_it_followed_ended(tmp_path: Path,
                                                   fake_claude: FakeClaude) -> None:
    """`--status --follow` exited 0 whatever the run it followed did: a task failed, or the
    run stopped early (its budget spent), the run exited non-zero and its follower 0. A script
    that waits on the follower now learns how the run ended: the run's own exit code."""
    ok = make_repo(tmp_path / "ok", plan="- [ ] a1\n")
    assert agent_loop(ok, "--no-distill").returncode == 0
    assert agent_loop(ok, "--status", "--follow", timeout=30).returncode == 0
    failed = make_repo(tmp_path / "failed", plan="- [ ] a1\n  FAKE: fail 99\n")
    run = agent_loop(failed, "--no-distill", "--max-attempts", "1")
    assert run.returncode not in (0, None), run.stdout + run.stderr
    follow = agent_loop(failed, "--status", "--follow", timeout=30)
    assert follow.returncode == run.returncode, follow.stdout + follow.stderr
    spent = make_repo(tmp_path / "spent", plan="- [ ] a1\n  FAKE: cost 1\n- [ ] a2\n")
    run = agent_loop(spent, "--no-distill", "--budget", "0.5")
    assert run.returncode == 1, run.stdout + run.stderr
    follow = agent_loop(spent, "--status", "--follow", timeout=30)
    assert follow.returncode == 1, follow.stdout + follow.stderr


def test_follow_of_a_run_killed_before_its_first_event_ends(tmp_path: Path,
                                                            fake_claude: FakeClaude) -> None:
    """A run that holds the plan's run lock but has written no event yet (its events.jsonl not
    there), killed then: `--status --follow` waited for ever for the file. It now ends once no
    run holds the lock, as for a run killed midway."""
    import subprocess

    work = make_repo(tmp_path / "work", plan="- [ ] a1\n")
    # A run's first steps, the lock taken, and no further: killed before it says anything.
    holder = _holding_the_lock(work)
    follower = None
    try:
        assert not (work / ".agent-loop" / "events.jsonl").exists()
        follower = _following(work)
        try:
            follower.wait(timeout=2)   # it follows: the run holds the lock
        except subprocess.TimeoutExpired:
            pass
        assert follower.poll() is None, follower.communicate()
        holder.kill()
        holder.wait()
        out, err = follower.communicate(timeout=15)
        assert follower.returncode == 1 and "ended without finishing" in err, (out, err)
    finally:
        holder.kill()
        holder.wait()
        if follower is not None:
            follower.kill()
            follower.wait()


def test_follow_while_a_new_run_starts_follows_it_not_the_last_one(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """A run that holds the lock and has not written its first event yet, an earlier run's
    events in events.jsonl: `--status --follow` showed that earlier run's end and exited at
    once (its exit code), as if it were the run going on. It now waits for the new run's first
    line and follows that run."""
    import json
    import subprocess

    work = make_repo(tmp_path / "work", plan="- [ ] a1\n")
    assert agent_loop(work, "--no-distill").returncode == 0
    events = work / ".agent-loop" / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    started = next(line for line in lines if b'"type":"RunStarted"' in line)
    finished = json.loads(next(line for line in lines if b'"type":"RunFinished"' in line))
    holder = _holding_the_lock(work)
    follower = None
    try:
        follower = _following(work)
        try:
            follower.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        assert follower.poll() is None, follower.communicate()
        # The new run's first and last lines, as a run writes them: it ended with exit 4.
        with events.open("ab") as out:
            out.write(started)
            out.write(json.dumps({**finished, "exit_code": 4}).encode() + b"\n")
        out_text, err = follower.communicate(timeout=15)
        assert follower.returncode == 4, (out_text, err)
    finally:
        holder.kill()
        holder.wait()
        if follower is not None:
            follower.kill()
            follower.wait()


def _holding_the_lock(work: Path) -> subprocess.Popen[str]:
    """A process that has taken the run's lock, as a run's first steps do, and goes no
    further (it writes no event): returned once it holds the lock."""
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", "import pathlib, time\n"
         "from agentloop.state.project import open_project\n"
         "with open_project(pathlib.Path('tasks.md'), pathlib.Path.cwd()).store.lock():\n"
         "    print('held', flush=True)\n    time.sleep(120)\n"],
        cwd=work, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _following(work: Path) -> subprocess.Popen[str]:
    """`agent-loop tasks.md --status --follow` started in `work`."""
    import os
    import sys

    return subprocess.Popen(
        [sys.executable, "-m", "agentloop", "tasks.md", "--status", "--follow"], cwd=work,
        env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
