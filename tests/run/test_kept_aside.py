"""Nothing a roll-back undoes is lost: an attempt that failed and is retried, or that Ctrl+C
stopped (while the agent worked, or while the checks ran on its finished work), is kept aside
before its files are put back (git: a commit under refs/agent-loop/rolled-back; jj: a change
beside the line), and the run says in one line where and the command that brings it back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, jj, make_repo, state_of
from tests.support.runner import agent_loop, plain_shell

pytestmark = pytest.mark.usefixtures("plain_shell")
assert plain_shell  # the fixture, imported for the mark above

SAVED = "refs/agent-loop/rolled-back"
# What the user does in their checkout while the agent works: acted out by the agent's own Bash
# tool, so the test needs no clock (agent-loop cannot tell who wrote).
USER_MEANWHILE = "echo 'my edit' >> {root}/notes.txt; echo mine > {root}/draft.txt"


def project(tmp_path: Path, kind: str, plan: str) -> Path:
    work = make_repo(tmp_path / "project", kind, {"README.md": "hello\n", "notes.txt": "v1\n"})
    (work / "tasks.md").write_text(plan)
    if kind == "git":
        git(work, "add", "tasks.md")
        git(work, "commit", "-qm", "plan")
    return work


def brought_back(work: Path, out: str) -> None:
    """Run the command the run's line names (as a user pastes it)."""
    command = re.search(r"`((?:git|jj) [^`]+)` brings", out)
    assert command is not None, out
    subprocess.run(["sh", "-c", command.group(1)], cwd=work, check=True, capture_output=True)


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_failed_attempt_is_kept_aside_with_the_users_edits(tmp_path: Path, kind: str,
                                                             fake_claude: FakeClaude) -> None:
    work = project(tmp_path, kind, (
        "- the task\n"
        f"  FAKE: bash {USER_MEANWHILE.format(root=tmp_path / 'project')}\n"
        "  FAKE: write a.txt a\n"
        "  FAKE: fail 1\n"))
    done = agent_loop(work, "--vcs", kind, "--workplace", "checkout", "--no-distill",
                      "--backoff", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if "rolled back" in line)
    assert "kept in" in line and "brings" in line
    if kind == "git":
        assert sorted(git(work, "show", "--name-only", "--format=", SAVED).split()) == \
            ["a.txt", "draft.txt", "notes.txt"]
        assert git(work, "show", f"{SAVED}:notes.txt") == "v1\nmy edit\n"
    else:
        kept = jj(work, "log", "--no-graph", "-r", 'description(substring:"rolled back")',
                  "-T", 'self.diff().files().map(|f| f.path()).join(",")')
        assert sorted(kept.split(",")) == ["a.txt", "draft.txt", "notes.txt"]
        # Beside the line: never below the tasks' changes.
        assert not jj(work, "log", "--no-graph", "-r",
                      '::@ & description(substring:"rolled back")', "-T", "change_id")


def start(work: Path, *args: str) -> subprocess.Popen[str]:
    # A session of its own, as a terminal gives its foreground job: Ctrl+C goes to the group.
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                             "--workplace", "checkout", *args], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(child: subprocess.Popen[str], sign: Path) -> None:
    deadline = time.monotonic() + 60
    while not sign.exists():
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.02)


def ctrl_c(child: subprocess.Popen[str]) -> str:
    os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, out + err
    return out + err


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_ctrl_c_keeps_the_agents_and_the_users_edits_aside(tmp_path: Path, kind: str,
                                                           fake_claude: FakeClaude) -> None:
    work = project(tmp_path, kind, (
        "- the task\n  FAKE: write a.txt a\n  FAKE: write started.txt now\n  FAKE: pause 30\n"))
    child = start(work, "--vcs", kind)
    wait_for(child, work / "started.txt")
    # The user edits a file the agent never touches, then presses Ctrl+C.
    (work / "notes.txt").write_text("v1\nmy edit\n")
    out = ctrl_c(child)
    assert not (work / "a.txt").exists()  # rolled back, as before
    # Stopped before its agent reported what it spent: not known, never a known $0.
    last = state_of(work)["tasks"][0]["history"][-1]
    assert last["outcome"] == "interrupted" and last["cost_known"] is False
    assert "rolled back" in out and "kept in" in out
    brought_back(work, out)
    assert (work / "notes.txt").read_text() == "v1\nmy edit\n"
    assert (work / "a.txt").read_text() == "a\n"


def test_ctrl_c_during_the_check_keeps_the_finished_work(tmp_path: Path,
                                                         fake_claude: FakeClaude) -> None:
    work = project(tmp_path, "git", "- the task\n  FAKE: write a.txt a\n")
    # The check passes at once before the agent (the baseline), and hangs after it.
    child = start(work, "--vcs", "git", "--check",
                  "test -f a.txt || exit 0; touch checking; sleep 30")
    wait_for(child, work / "checking")
    out = ctrl_c(child)
    assert git(work, "show", f"{SAVED}:a.txt") == "a\n", out
    assert "rolled back" in out
    assert state_of(work)["tasks"][0]["status"] == "interrupted"


def stopped_in_the_check(tmp_path: Path, kind: str, plan: str, workplace: str,
                         stop: str = "kill", then: str | None = None) -> tuple[Path, str]:
    """A run of `plan` whose check hangs once, after the agent wrote a.txt, stopped there (Ctrl+C,
    or kill -9: the OOM killer, a closed laptop), then run again (in workplace `then`, the same
    by default): the repository and what the second run printed."""
    work = project(tmp_path, kind, plan)
    once, checking = tmp_path / "once", tmp_path / "checking"
    # Passes before the agent (the baseline); after it, hangs the first time only.
    check = (f"test -f a.txt || exit 0; test -e {once} && exit 0; touch {once} {checking}; "
             "sleep 30")
    child = start(work, "--vcs", kind, "--workplace", workplace, "--check", check)
    wait_for(child, checking)
    if stop == "ctrl_c":
        ctrl_c(child)
        assert not (work / "a.txt").exists()
    else:
        child.kill()  # SIGKILL to agent-loop alone: no handler runs, nothing is rolled back
        child.communicate(timeout=60)
    again = agent_loop(work, "--vcs", kind, "--workplace", then or workplace, "--no-distill",
                       "--check", check)
    assert again.returncode == 0, again.stdout + again.stderr
    return work, again.stdout


@pytest.mark.parametrize("stop", ["ctrl_c", "kill"])
@pytest.mark.parametrize("kind", ["git", "jj"])
@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_the_run_after_a_stop_in_the_check_brings_the_work_back_and_only_checks(
        tmp_path: Path, kind: str, workplace: str, stop: str, fake_claude: FakeClaude) -> None:
    # Ctrl+C, or kill -9 (the OOM killer, a closed laptop, `kill -9` of a run that seemed
    # stuck), while the checks run on a finished agent's work: the next run brings that work
    # back and pays the agent nothing more (after a kill it ran the agent again, paid twice).
    work, out = stopped_in_the_check(tmp_path, kind, "## G\n- the task\n  FAKE: write a.txt a\n",
                                     workplace, stop)
    assert len(fake_claude.task_prompts()) == 1, out  # the agent was paid once
    assert "its agent had finished" in out, out
    assert (work / "a.txt").read_text() == "a\n"
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
    assert task["history"][-1]["outcome"] == "completed"
    assert task["history"][-1]["checks"][-1]["exit_code"] == 0
    listed = git(work, "show", "--name-only", "--format=", "HEAD") if kind == "git" else \
        jj(work, "log", "--no-graph", "-r", "@-", "-T", 'self.diff().files().map(|f| f.path())')
    assert listed.split() == ["a.txt"]


def test_kept_work_that_no_longer_fits_is_not_brought_back_in_conflict(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # jj's squash exits 0 on a conflict and stores it in the change: a task "completed" with
    # markers in its commit would follow. The user committed their own a.txt after the stop.
    work = project(tmp_path, "jj", "## G\n- the task\n  FAKE: write a.txt a\n")
    once, checking = tmp_path / "once", tmp_path / "checking"
    check = (f"test -f a.txt || exit 0; test -e {once} && exit 0; touch {once} {checking}; "
             "sleep 30")
    child = start(work, "--vcs", "jj", "--workplace", "checkout", "--check", check)
    wait_for(child, checking)
    ctrl_c(child)
    (work / "a.txt").write_text("mine\n")
    jj(work, "commit", "-m", "my a.txt")
    again = agent_loop(work, "--vcs", "jj", "--workplace", "checkout", "--no-distill",
                       "--check", check)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_prompts()) == 2, again.stdout  # it had to work again
    assert "<<<<<<<" not in (work / "a.txt").read_text()
    assert jj(work, "log", "--no-graph", "-r", "conflicts()", "-T", "change_id") == ""
    assert state_of(work)["tasks"][0]["status"] == "completed"


def test_a_lanes_failed_attempt_is_kept_aside_too(tmp_path: Path,
                                                  fake_claude: FakeClaude) -> None:
    work = project(tmp_path, "git", "## A\n- the task\n  FAKE: write a.txt a\n  FAKE: fail 1\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "lane", "--no-distill",
                      "--backoff", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(work, "show", f"{SAVED}:a.txt") == "a\n"
    assert "rolled back" in done.stdout


def test_the_killed_runs_own_output_file_is_left_alone_by_the_next_run(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # `agent-loop tasks.md --workplace checkout > run.log`, killed while the agent works, then
    # the same command printing to the terminal: run.log, the user's record of the killed run,
    # was taken for the attempt's own file, rolled back (gone from the checkout) and, once the
    # finished work came back, committed with the task.
    work = project(tmp_path, "git", "- the task\n  FAKE: write started.txt now\n"
                                    "  FAKE: pause 30\n  FAKE: write a.txt a\n")
    with open(work / "run.log", "w") as log:
        child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                                  "--workplace", "checkout"], cwd=work, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    wait_for(child, work / "started.txt")
    child.kill()
    child.wait(timeout=60)
    said = (work / "run.log").read_text()
    assert "task 1" in said, said
    (work / "tasks.md").write_text("- the task\n  FAKE: write a.txt a\n")
    # Yours now, as after a run that ended: the checkout's run refuses it, by name.
    refused = agent_loop(work, "--no-distill", "--workplace", "checkout")
    assert refused.returncode != 0 and "run.log" in refused.stderr, refused.stderr
    assert (work / "run.log").read_text() == said
    again = agent_loop(work, "--no-distill", "--workplace", "checkout", "--allow-dirty")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "run.log").read_text() == said
    assert "run.log" not in git(work, "log", "--name-only", "--format=")
    assert (work / "a.txt").read_text() == "a\n"


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_a_kill_in_the_check_after_the_agent_committed_itself_pays_it_once(
        tmp_path: Path, workplace: str, fake_claude: FakeClaude) -> None:
    # The agent commits its own work (as agents do, told not to), then agent-loop is killed in
    # the check: the next run goes on from its commit, and ran the agent again to "finish the
    # task from it" (paid twice) though it had finished.
    work, out = stopped_in_the_check(tmp_path, "git", "## G\n- the task\n  FAKE: write a.txt a\n"
                                     "  FAKE: commit my work\n", workplace)
    assert len(fake_claude.task_prompts()) == 1, out  # the agent was paid once
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
    assert git(work, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
    assert git(work, "log", "--format=%s", "-1") == "agent-loop: G / the task\n"


@pytest.mark.parametrize("kind", ["git", "jj"])
@pytest.mark.parametrize("first, then", [("checkout", "lane"), ("lane", "checkout")])
def test_the_run_after_a_kill_in_the_check_on_another_workplace_goes_on(
        tmp_path: Path, kind: str, first: str, then: str, fake_claude: FakeClaude) -> None:
    # As test_the_run_after_a_stop_in_the_check_brings_the_work_back_and_only_checks, the next
    # run on the other workplace (the default, or --parallel, chose differently): git paid the
    # agent again. jj, checkout then lane: the lane dropped the killed attempt, your checkout's
    # @, which left your checkout stale, and the task's landing there stopped the run ("The
    # working copy is stale", exit 1); lane then checkout: the agent's files, never taken into
    # the lane's change, were not kept, and the agent was paid again.
    work, out = stopped_in_the_check(tmp_path, kind, "## G\n- the task\n  FAKE: write a.txt a\n",
                                     first, then=then)
    assert len(fake_claude.task_prompts()) == 1, out  # the agent was paid once
    assert "its agent had finished" in out, out
    assert len([line for line in out.splitlines() if "rolled back" in line]) == 1, out
    assert (work / "a.txt").read_text() == "a\n"
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
    if kind == "git":
        assert git(work, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
        return
    assert jj(work, "log", "--no-graph", "-r", "@-", "-T",
              'self.diff().files().map(|f| f.path())').split() == ["a.txt"]
    # One change for the task, and your checkout up to date (jj would refuse it, stale).
    assert jj(work, "log", "--no-graph", "-r", '::@ & description(glob:"agent-loop:*")',
              "-T", 'change_id ++ "\\n"').count("\n") == 1


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_jj_a_kill_in_the_check_after_the_agent_committed_itself_pays_it_once(
        tmp_path: Path, workplace: str, fake_claude: FakeClaude) -> None:
    # As the git test above, with jj: the agent runs `jj commit` itself (its work in a change
    # of its own, @ a new empty one on top), agent-loop is killed in the check; the next run
    # goes on from the kept change (JjVcs.keeps) and runs the agent again (paid twice).
    work, out = stopped_in_the_check(tmp_path, "jj", "## G\n- the task\n  FAKE: write a.txt a\n"
                                     "  FAKE: bash jj commit -m mine\n", workplace)
    assert len(fake_claude.task_prompts()) == 1, out  # the agent was paid once


@pytest.mark.parametrize("kind, where, first, then", [
    *[(kind, where, "checkout", "checkout") for kind in ("git", "jj")
      for where in ("agent", "check")],
    ("git", "check", "checkout", "lane"), ("git", "check", "lane", "lane"),
    ("git", "agent", "lane", "lane"), ("jj", "check", "lane", "lane"),
    ("jj", "agent", "lane", "lane")])
def test_the_run_after_a_kill_says_the_roll_back_once(tmp_path: Path, kind: str, where: str,
                                                      first: str, then: str,
                                                      fake_claude: FakeClaude) -> None:
    # kill -9 while the agent works (or in the check, its agent finished): the next run rolls
    # the attempt back once, and said so twice (git), as its prepare found the attempt (among
    # the run's first lines) and again as it dropped the attempt's record; two roll-backs.
    # A git lane's prepare said nothing: a killed agent's attempt rolled back there went
    # unsaid (its agent had not finished, so no record of the attempt says it either).
    if where == "check":
        _, out = stopped_in_the_check(tmp_path, kind, "## G\n- the task\n  FAKE: write a.txt a\n",
                                      first, then=then)
    else:
        started = tmp_path / "started"
        # The agent waits the first time only (the plan stays as the killed run read it).
        work = project(tmp_path, kind, "- the task\n  FAKE: write a.txt a\n"
                                       f"  FAKE: bash test -e {started} || (touch {started}; "
                                       "sleep 30)\n")
        child = start(work, "--vcs", kind, "--workplace", first)
        wait_for(child, started)
        child.kill()  # SIGKILL to agent-loop alone: no handler runs, nothing is rolled back
        child.communicate(timeout=60)
        again = agent_loop(work, "--vcs", kind, "--workplace", then, "--no-distill")
        assert again.returncode == 0, again.stdout + again.stderr
        out = again.stdout
    said = [line for line in out.splitlines() if "rolled back" in line]
    assert len(said) == 1, out
    assert "kept in" in said[0], out


def test_the_run_that_refuses_a_dirty_checkout_says_the_roll_back_first(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # kill -9 while the agent works in your checkout beside an edit of yours (--allow-dirty):
    # the next run, without it, rolled the attempt back into a commit, then refused the edit,
    # and the refusal was the only line, so where the attempt's files went was never said.
    started = tmp_path / "started"
    work = project(tmp_path, "git", "- the task\n  FAKE: write a.txt a\n"
                                    f"  FAKE: bash touch {started}; sleep 30\n")
    (work / "notes.txt").write_text("my edit\n")
    child = start(work, "--vcs", "git", "--allow-dirty")
    wait_for(child, started)
    child.kill()  # SIGKILL to agent-loop alone: no handler runs, nothing is rolled back
    child.communicate(timeout=60)
    again = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill")
    said = (again.stdout + again.stderr).splitlines()
    assert again.returncode == 1, said
    rolled = [n for n, line in enumerate(said) if "rolled back" in line]
    refused = [n for n, line in enumerate(said) if "uncommitted file(s)" in line]
    assert len(rolled) == 1 and refused and rolled[0] < refused[0], said
    # Named by its commit: the ref moves on with the next thing kept (agentloop.vcs.git.recover).
    kept = git(work, "rev-parse", SAVED)[:12]
    assert "kept in" in said[rolled[0]] and kept in said[rolled[0]], said
    assert not (work / "a.txt").exists() and (work / "notes.txt").read_text() == "my edit\n"
    assert git(work, "show", f"{SAVED}:a.txt").strip() == "a"
    brought_back(work, said[rolled[0]])  # the command as the line gives it
    assert (work / "a.txt").read_text().strip() == "a"


def test_jj_a_killed_finished_attempt_is_kept_when_another_task_began_first(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Two groups in parallel lanes, killed while B's check runs (its agent finished) and A's
    # agent still works; the next run, in your checkout, begins A again first. B's attempt,
    # the lane's @, had its agent's files only on disk there: taken in only while the run had
    # begun no task yet, B's agent was paid again once A had begun.
    plan = ("## A\n- slow\n  FAKE: sleep 3\n  FAKE: write x.txt x\n"
            "## B\n- quick\n  FAKE: write a.txt a\n")
    work = project(tmp_path, "jj", plan)
    once, checking = tmp_path / "once", tmp_path / "checking"
    check = (f"test -f a.txt || exit 0; test -e {once} && exit 0; touch {once} {checking}; "
             "sleep 30")
    child = start(work, "--vcs", "jj", "--workplace", "lane", "--parallel", "2",
                  "--check", check)
    wait_for(child, checking)
    child.kill()  # kill -9 of agent-loop alone: A's agent dies with it (the watchdog)
    child.communicate(timeout=60)
    again = agent_loop(work, "--vcs", "jj", "--workplace", "checkout", "--no-distill",
                       "--check", check)
    assert again.returncode == 0, again.stdout + again.stderr
    quick = [p for p in fake_claude.task_prompts() if "quick" in p]
    assert len(quick) == 1, again.stdout  # B's agent was paid once
    assert (work / "a.txt").read_text() == "a\n" and (work / "x.txt").read_text() == "x\n"
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"], tasks


def wrapped(work: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch, script: str,
            **env: Path) -> None:
    """The agent agent-loop starts is `script` from here on: a shell script first in PATH (in
    a folder beside `work`) that runs the fake agent ($REAL_CLAUDE), told `env`."""
    wrapper = work.parent / "wrapper" / "claude"
    wrapper.parent.mkdir()
    wrapper.write_text(script)
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("REAL_CLAUDE", str(fake_claude.bin))
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))


def stopped_by_its_agent(work: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch,
                         script: str, args: tuple[str, ...],
                         **env: Path) -> tuple[int, str]:
    """agent-loop run in `work` with `args`, the agent it starts being `script`: a shell script
    in its PATH that runs the fake agent ($REAL_CLAUDE) and stops agent-loop at the moment it
    waits for (told by `env`). Its exit code and its output, once it ends."""
    wrapped(work, fake_claude, monkeypatch, script, **env)
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = child.communicate(timeout=120)
    return child.returncode, out + err


def paid_once(work: Path, fake_claude: FakeClaude, again: subprocess.CompletedProcess[str],
              task: int, asked: str) -> None:
    """The run `again` after the stop took task `task`'s finished work (its agent `asked`
    once) as done, said so, and finished every task: the agent was paid once."""
    assert again.returncode == 0, again.stdout + again.stderr
    runs = [p for p in fake_claude.task_prompts() if asked in p]
    assert len(runs) == 1, again.stdout
    assert "its agent had finished before the last run was" in again.stdout, again.stdout
    tasks = state_of(work)["tasks"]
    assert {t["status"] for t in tasks} == {"completed"}, tasks
    done = tasks[task - 1]
    assert done["attempts"] == 1 and done["cost_usd"] > 0, done


def first_paid_once_both_landed(work: Path, fake_claude: FakeClaude,
                                again: subprocess.CompletedProcess[str]) -> None:
    """Of a plan of two tasks (`one` writes a.txt, `two` b.txt): the run `again` after the stop
    took task 1's finished work as done (paid_once), and both tasks landed, task 1 in one
    commit."""
    paid_once(work, fake_claude, again, task=1, asked="write a.txt")
    assert "its agent had finished before the last run was stopped" in again.stdout
    assert (work / "a.txt").read_text() == "a\n" and (work / "b.txt").read_text() == "b\n"
    subjects = git(work, "log", "--format=%s").splitlines()
    assert sum("one" in s for s in subjects) == 1, subjects


# The agent as agent-loop starts it, the fake inside: once its run that wrote b.txt has ended
# with a success result, and agent-loop has kept that line in the run's raw log, agent-loop is
# killed (kill -9, as by the OOM killer) before the agent has exited: agent-loop has not yet
# recorded the run's result, so the record still says the agent runs.
KILL_AFTER_RESULT = """#!/bin/sh
"$REAL_CLAUDE" "$@"
code=$?
if [ -e b.txt ] && [ ! -e "$KILLED" ]; then
    touch "$KILLED"
    n=0
    until grep -qs '"type": "result"' "$LOGS"/002-*.jsonl || [ $n -ge 500 ]; do
        sleep 0.01; n=$((n + 1))
    done
    kill -9 $PPID
fi
exit $code
"""


@pytest.mark.parametrize("kind, how", [("git", "serial"), ("git", "parallel"),
                                       ("jj", "parallel")])
def test_a_kill_as_the_agent_ends_well_pays_it_once(tmp_path: Path, kind: str, how: str,
                                                   fake_claude: FakeClaude,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # kill -9 between the agent's success result (in its log, its work in the working copy)
    # and the record of it: the next run rolled the attempt back as unfinished and ran the
    # agent again (paid twice), where a kill a moment later (in the check) is not.
    work = project(tmp_path, kind, "## A\n- one\n  FAKE: write a.txt a\n"
                                   "- two\n  FAKE: write b.txt b\n## B\n- three\n"
                                   "  FAKE: write c.txt c\n")
    where = ("--workplace", "checkout") if how == "serial" else ("--parallel", "2")
    code, out = stopped_by_its_agent(
        work, fake_claude, monkeypatch, KILL_AFTER_RESULT, ("--no-distill", "--vcs", kind, *where),
        KILLED=tmp_path / "killed", LOGS=work / ".agent-loop" / "logs")
    assert code == -signal.SIGKILL, out
    assert '"is_error": false' in next((work / ".agent-loop" / "logs").glob("002-*.jsonl")
                                       ).read_text()
    again = agent_loop(work, "--vcs", kind, *where, "--no-distill")
    paid_once(work, fake_claude, again, task=2, asked="write b.txt")
    assert (work / "b.txt").read_text() == "b\n"
    if kind == "git":
        subjects = git(work, "log", "--format=%s").splitlines()
        assert subjects.count("agent-loop: A / two") == 1, subjects
        assert "b.txt" in git(work, "show", "--name-only", "--format=",
                              ":/agent-loop: A / two")


def test_a_kill_in_the_reviewers_run_pays_the_developer_once(tmp_path: Path,
                                                               fake_claude: FakeClaude) -> None:
    # kill -9 while the reviewer's agent runs (--review): its record, last of the task's, is
    # not the developer's, and the next run took the developer's finished, paid work for
    # unfinished and ran the developer again.
    holding = tmp_path / "holding"
    work = project(tmp_path, "git",
                   f"- one\n  FAKE: write a.txt a\n  FAKE: review-hold {holding}\n")
    child = start(work, "--review")
    wait_for(child, holding)
    child.kill()  # kill -9 of agent-loop alone: the reviewer dies with it (the watchdog)
    child.communicate(timeout=60)
    again = agent_loop(work, "--workplace", "checkout", "--review", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    runs = [c for c in fake_claude.task_runs() if "--tools" not in c["argv"]]  # not reviews
    assert len(runs) == 1, again.stdout  # the developer was paid once
    assert "its agent had finished" in again.stdout, again.stdout
    assert (work / "a.txt").read_text() == "a\n"
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
    assert "a.txt" in git(work, "show", "--name-only", "--format=", "HEAD")


# The agent as agent-loop starts it, the fake inside: the first run after the agent's that was
# asked for a.txt (the helper writing its commit message) sends Ctrl+C to agent-loop as it
# starts.
CTRL_C_AT_THE_MESSAGE = """#!/bin/sh
case " $* " in *" --tools "*)
    if grep -qs 'write a.txt' "$FAKE_CLAUDE_LOG" && [ ! -e "$STOPPED" ]; then
        touch "$STOPPED"
        kill -INT $PPID
    fi
esac
exec "$REAL_CLAUDE" "$@"
"""


def test_ctrl_c_after_the_agent_ended_well_pays_it_once(tmp_path: Path, fake_claude: FakeClaude,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl+C after the agent's success was recorded, while its commit message was written
    # (before it landed): the next run rolled the attempt back as unfinished and ran the agent
    # again (paid twice), where a kill -9 at the same moment is read back and not repaid.
    work = project(tmp_path, "git", "## A\n- one\n  FAKE: write a.txt a\n"
                                    "- two\n  FAKE: write b.txt b\n")
    code, out = stopped_by_its_agent(work, fake_claude, monkeypatch, CTRL_C_AT_THE_MESSAGE,
                                     ("--vcs", "git"), STOPPED=tmp_path / "stopped")
    assert code == 130 and (tmp_path / "stopped").exists(), out
    assert "ran in session" in out and "1 interrupted" in out, out
    again = agent_loop(work, "--vcs", "git")
    first_paid_once_both_landed(work, fake_claude, again)


# The commit of the agent's work fails (git cannot lock your branch: another git left its lock
# while the commit message was written): an error, not a stop.
BRANCH_LOCKED_AT_THE_MESSAGE = """#!/bin/sh
case " $* " in *" --tools "*)
    if grep -qs 'write a.txt' "$FAKE_CLAUDE_LOG" && [ ! -e "$STOPPED" ]; then
        touch "$STOPPED" "$(git rev-parse --git-dir)/refs/heads/main.lock"
    fi
esac
exec "$REAL_CLAUDE" "$@"
"""


def test_an_error_after_the_agent_ended_well_keeps_its_work_aside(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # An error (git failing to commit) after the agent's success was recorded, before its
    # commit: the run's end interrupted the task with its change named, and the next run
    # rolled it back and ran (paid) the agent again, where a Ctrl+C keeps the work aside.
    work = project(tmp_path, "git", "## A\n- one\n  FAKE: write a.txt a\n"
                                    "- two\n  FAKE: write b.txt b\n")
    wrapped(work, fake_claude, monkeypatch, BRANCH_LOCKED_AT_THE_MESSAGE,
            STOPPED=tmp_path / "stopped")
    first = agent_loop(work, "--vcs", "git", "--workplace", "checkout")
    said = first.stdout + first.stderr
    assert first.returncode != 0 and (tmp_path / "stopped").exists(), said
    assert "Traceback" not in said, said
    assert "task 1: its agent had finished before the error below; its work is kept aside" \
        in said, said
    (work / ".git" / "refs" / "heads" / "main.lock").unlink()  # the user takes the lock away
    again = agent_loop(work, "--vcs", "git", "--workplace", "checkout")
    first_paid_once_both_landed(work, fake_claude, again)


# The reviewer as agent-loop starts it (--tools: read-only), the fake inside: once its run has
# ended with its verdict, and agent-loop has kept that line in the run's raw log, agent-loop is
# killed (kill -9) before it recorded the verdict.
KILL_AFTER_THE_REVIEW = """#!/bin/sh
"$REAL_CLAUDE" "$@"
code=$?
case " $* " in *" --tools "*)
    if [ ! -e "$KILLED" ]; then
        touch "$KILLED"
        n=0
        until grep -qs '"type": "result"' "$LOGS"/*-review1.jsonl || [ $n -ge 500 ]; do
            sleep 0.01; n=$((n + 1))
        done
        kill -9 $PPID
    fi
esac
exit $code
"""


def test_a_review_read_back_after_a_kill_is_not_paid_again(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # kill -9 after the reviewer's verdict was in its raw log, before its record: the next run
    # read the reviewer's run back (recorded, paid), brought the developer's work back, and
    # ran the review again (paid twice).
    work = project(tmp_path, "git", "- one\n  FAKE: write a.txt a\n")
    wrapped(work, fake_claude, monkeypatch, KILL_AFTER_THE_REVIEW, KILLED=tmp_path / "killed",
            LOGS=work / ".agent-loop" / "logs")
    child = start(work, "--review")
    out, err = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, out + err
    again = agent_loop(work, "--workplace", "checkout", "--review", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    runs = fake_claude.task_runs()
    assert sum("--tools" not in c["argv"] for c in runs) == 1, again.stdout  # the developer
    assert sum("--tools" in c["argv"] for c in runs) == 1, again.stdout  # and the reviewer
    assert "its agent had finished" in again.stdout, again.stdout
    assert "the reviewer's verdict of round 1 in the last run stands" in again.stdout, \
        again.stdout
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task
    reviews = [a for a in task["history"] if a["role"] == "reviewer"]
    assert len(reviews) == 1 and reviews[0]["verdict"] == "approved", reviews
    assert "a.txt" in git(work, "show", "--name-only", "--format=", "HEAD")


# kill -9 of agent-loop as the commit message's helper starts (the agent's success recorded).
KILL_AT_THE_MESSAGE = CTRL_C_AT_THE_MESSAGE.replace("kill -INT $PPID", "kill -9 $PPID")


def test_an_older_versions_ctrl_c_after_the_agent_ended_well_pays_it_once(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # An older agent-loop's Ctrl+C after the agent's success was recorded, before its commit:
    # its run's end left the task interrupted (ledger.left_open), the finished work still in
    # the lane, nothing kept aside. This version rolled that back as unfinished and ran the
    # agent again. The state is made as that version left it: a kill at that moment, then the
    # records as its run's end wrote them.
    from agentloop.state.status import TaskStatus
    from agentloop.state.store import Store

    work = project(tmp_path, "git", "## A\n- one\n  FAKE: write a.txt a\n"
                                    "- two\n  FAKE: write b.txt b\n")
    code, out = stopped_by_its_agent(work, fake_claude, monkeypatch, KILL_AT_THE_MESSAGE,
                                     ("--vcs", "git"), STOPPED=tmp_path / "stopped")
    assert code == -signal.SIGKILL and (tmp_path / "stopped").exists(), out
    store = Store(work)
    state = store.load()
    assert state is not None
    task = state.tasks[0]
    assert task.status == TaskStatus.RUNNING and task.history[-1].exit_code == 0, task
    for record in task.history:  # as ledger.uncount marked them
        record.outcome = "interrupted"
    task.status, task.error, task.attempts = TaskStatus.INTERRUPTED, "interrupted", 0
    store.save(state)
    again = agent_loop(work, "--vcs", "git")
    first_paid_once_both_landed(work, fake_claude, again)


def test_an_error_in_the_hooks_after_the_agent_ended_well_keeps_its_work_aside(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # An error in the checks (git cannot make the index the repository's hooks run on: its
    # lock was left) after the agent ended well: the attempt was dropped as stopped, its work
    # not kept, and the next run ran (paid) the agent again.
    work = project(tmp_path, "git", "## A\n- one\n  FAKE: write a.txt a\n")
    hook = work / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    lock, once = work / ".git" / "agent-loop-hooks.index.lock", tmp_path / "once"
    plan = (work / "tasks.md").read_text().replace(
        "  FAKE: write a.txt a\n", f"  FAKE: write a.txt a\n  FAKE: bash test -e {once} || "
                                   f"touch {once} {lock}\n")
    (work / "tasks.md").write_text(plan)
    git(work, "commit", "-qam", "plan")
    first = agent_loop(work, "--workplace", "checkout", "--git-hooks", "--no-distill")
    said = first.stdout + first.stderr
    assert first.returncode != 0 and "Traceback" not in said, said
    assert "task 1: its agent had finished before the error below; its work is kept aside" \
        in said, said
    lock.unlink()  # the user takes the lock away
    again = agent_loop(work, "--workplace", "checkout", "--git-hooks", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    runs = [p for p in fake_claude.task_prompts() if "write a.txt" in p]
    assert len(runs) == 1, again.stdout  # the agent was paid once
    assert "its agent had finished before the last run was stopped" in again.stdout, again.stdout
    assert (work / "a.txt").read_text() == "a\n"
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task


# Ctrl+C to agent-loop as its second read-only run starts: after the reviewer's (approved), the
# commit message's helper.
CTRL_C_AT_THE_MESSAGE_AFTER_REVIEW = """#!/bin/sh
case " $* " in *" --tools "*)
    echo x >> "$STOPPED.count"
    if [ "$(wc -l < "$STOPPED.count")" -eq 2 ] && [ ! -e "$STOPPED" ]; then
        touch "$STOPPED"
        kill -INT $PPID
    fi
esac
exec "$REAL_CLAUDE" "$@"
"""


def test_ctrl_c_after_the_review_approved_pays_neither_again(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl+C after the reviewer approved, as the commit message was written: the reviewer's
    # record came last, so the kept work was not brought back, and the developer and the
    # reviewer ran (were paid) again.
    work = project(tmp_path, "git", "- one\n  FAKE: write a.txt a\n")
    wrapped(work, fake_claude, monkeypatch, CTRL_C_AT_THE_MESSAGE_AFTER_REVIEW,
            STOPPED=tmp_path / "stopped")
    child = start(work, "--review", "--distill")
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130 and (tmp_path / "stopped").exists(), out + err
    again = agent_loop(work, "--workplace", "checkout", "--review", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    runs = fake_claude.task_runs()
    assert sum("--tools" not in c["argv"] for c in runs) == 1, again.stdout  # the developer
    assert "reviewer checking" not in again.stdout, again.stdout  # the reviewer ran once
    assert "its agent had finished" in again.stdout, again.stdout
    assert "the reviewer's verdict of round 1 in the last run stands" in again.stdout, \
        again.stdout
    task = state_of(work)["tasks"][0]
    assert task["status"] == "completed" and task["attempts"] == 1, task


def test_a_killed_runs_lane_you_locked_keeps_its_files_and_says_so(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # kill -9 while the agents work in their lanes, then `git worktree lock --reason mine` on
    # the lanes left: the next run removed them as half-made ones, your lock unsaid, and the
    # killed attempts' files went with them, kept nowhere (unlocked, they are rolled back and
    # kept under refs/agent-loop/rolled-back).
    once = tmp_path / "once"
    work = project(tmp_path, "git", "## A\n- a task\n  FAKE: write a.txt a\n"
                   "  FAKE: write started.txt now\n"
                   f"  FAKE: bash test -e {once} || {{ touch {once}; sleep 30; }}\n"
                   "## B\n- b task\n  FAKE: write b.txt b\n")
    (work / ".gitignore").write_text(".agent-loop/\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-qm", "ignore")
    child = start(work, "--parallel", "2")
    lanes = work / ".agent-loop" / "lanes"
    deadline = time.monotonic() + 60
    while not list(lanes.glob("*/started.txt")):
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    lane = next(lanes.glob("*/started.txt")).parent
    git(work, "worktree", "lock", "--reason", "mine", str(lane))
    again = agent_loop(work, "--no-distill", "--parallel", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    said = [line for line in again.stdout.splitlines() if "'mine'" in line]
    assert len(said) == 2 and lane.name in said[0], again.stdout
    assert "unlocked it and goes on in it, and locks it again when done" in said[0], said
    assert "left as it is" in said[1], said   # your lock back on it
    assert "locked mine" in git(work, "worktree", "list", "--porcelain"), again.stdout
    kept = git(work, "log", "-g", "--name-only", "--format=%H", SAVED)
    assert "started.txt" in kept, again.stdout + kept
    assert (work / "a.txt").read_text() == "a\n" and (work / "b.txt").read_text() == "b\n"


def _stopped_in_a_lane_you_locked(tmp_path: Path, lanes: tuple[str, str],
                                  more: str = "") -> tuple[Path, Path]:
    """Groups A and B in a git repository that ignores .agent-loop/; a run (`lanes`) stopped
    (Ctrl+C) in group A's agent, whose lane you then locked ('mine'): (the project, the lane).
    `more`: FAKE lines of A's task after the one that waits for the stop (its first run only)."""
    once = tmp_path / "once"
    work = project(tmp_path, "git", "## A\n- a task\n  FAKE: write a.txt a\n"
                   f"  FAKE: bash test -e {once} || {{ touch {once}; sleep 30; }}\n{more}"
                   "## B\n- b task\n  FAKE: write b.txt b\n")
    (work / ".gitignore").write_text(".agent-loop/\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-qm", "ignore")
    child = start(work, *lanes)
    wait_for(child, once)
    ctrl_c(child)
    # group A's lane, or the one lane of a run of one group at a time
    lane, = (work / ".agent-loop" / "lanes").glob("*-a" if "--parallel" in lanes else "*-serial")
    git(work, "worktree", "lock", "--reason", "mine", str(lane))
    return work, lane


@pytest.mark.parametrize("lanes", [("--parallel", "2"), ("--workplace", "lane")])
def test_a_lane_you_locked_is_locked_again_when_the_run_in_it_stops(
        tmp_path: Path, fake_claude: FakeClaude, lanes: tuple[str, str]) -> None:
    # A stopped run's lane you locked: the next run takes your lock off to go on in it, and
    # puts it back when it is done with it. Stopped there too (Ctrl+C), it kept the lane for
    # the group's next run but left it unlocked (`git worktree prune` or `remove` free to
    # take it) until a later run finished in it, or for good.
    twice = tmp_path / "twice"
    work, lane = _stopped_in_a_lane_you_locked(
        tmp_path, lanes, f"  FAKE: bash test -e {twice} || {{ touch {twice}; sleep 30; }}\n")
    child = start(work, *lanes)
    wait_for(child, twice)
    said = ctrl_c(child)
    assert "unlocked it and goes on in it, and locks it again when done" in said, said
    assert lane.is_dir(), said  # kept for the group's next run
    listed = git(work, "worktree", "list", "--porcelain")
    assert f"worktree {lane.resolve()}\n" in listed and "locked mine" in listed, said + listed
    last = agent_loop(work, "--no-distill", *lanes)
    assert last.returncode == 0, last.stdout + last.stderr
    assert "unlocked it and goes on in it" in last.stdout, last.stdout
    assert "locked mine" in git(work, "worktree", "list", "--porcelain"), last.stdout
    assert (work / "a.txt").read_text() == "a\n" and (work / "b.txt").read_text() == "b\n"


def test_a_lane_you_locked_keeps_your_lock_through_the_next_run(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A lane you locked (`git worktree lock`) is left as it is when its run is done. The
    # next run of the plan goes on in it (it unlocks it to), and then removed it, its ignored
    # files (a .env) with it, which no commit keeps: your lock is put back instead.
    work = project(tmp_path, "git", "## A\n- a1\n  FAKE: bash echo TOKEN=1 > secrets.env && "
                                    "git worktree lock --reason mine .\n"
                                    "  FAKE: write a1.txt 1\n")
    (work / ".git" / "info").mkdir(exist_ok=True)
    (work / ".git" / "info" / "exclude").write_text("*.env\n")
    first = agent_loop(work, "--vcs", "git", "--no-distill")
    assert first.returncode == 0, first.stdout + first.stderr
    lane, = (work / ".agent-loop" / "lanes").iterdir()
    assert "left as it is" in first.stdout and (lane / "secrets.env").is_file(), first.stdout
    with (work / "tasks.md").open("a") as plan:
        plan.write("- a2\n  FAKE: write a2.txt 2\n")
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "a2.txt").read_text() == "2\n"
    assert (lane / "secrets.env").read_text() == "TOKEN=1\n", again.stdout
    assert "locked mine" in git(work, "worktree", "list", "--porcelain"), again.stdout
    # unlocked by you, the next run removes it
    git(work, "worktree", "unlock", str(lane))
    with (work / "tasks.md").open("a") as plan:
        plan.write("- a3\n  FAKE: write a3.txt 3\n")
    last = agent_loop(work, "--vcs", "git", "--no-distill")
    assert last.returncode == 0 and not lane.exists(), last.stdout + last.stderr


def test_a_lane_you_locked_is_locked_again_when_the_budget_stops_the_run_between_groups(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The one lane of a run of one group at a time goes on to the next group; the budget,
    # reached by the group before, stops the run before that group's first task begins.
    work, lane = _stopped_in_a_lane_you_locked(tmp_path, ("--workplace", "lane"),
                                               "  FAKE: cost 5\n")
    second = agent_loop(work, "--no-distill", "--workplace", "lane", "--budget", "4")
    said = second.stdout + second.stderr
    assert "unlocked it and goes on in it" in said, said
    assert (work / "a.txt").read_text() == "a\n" and not (work / "b.txt").exists(), said
    listed = git(work, "worktree", "list", "--porcelain")
    assert f"worktree {lane.resolve()}\n" not in listed or "locked mine" in listed, \
        said + listed


def test_a_lane_you_locked_stays_locked_through_a_run_that_never_goes_on_in_it(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A stopped run's lane you locked, and a next run that stops before it goes on in it (its
    # budget spent): your lock stays on the lane, as a run that stops in it puts it back.
    work, lane = _stopped_in_a_lane_you_locked(tmp_path, ("--parallel", "2"))
    other = agent_loop(work, "--no-distill", "--parallel", "2", "--budget", "0")
    said = other.stdout + other.stderr
    # task 1 or task 2: whichever of the two lanes asks the budget first
    assert other.returncode == 1 and "budget reached before task " in said, said
    assert "unlocked it and goes on in it" in said, said
    listed = git(work, "worktree", "list", "--porcelain")
    assert f"worktree {lane.resolve()}\n" in listed and "locked mine" in listed, said + listed


@pytest.mark.parametrize("workplace, config", [
    ("checkout", None), ("checkout", ("color.ui", "always")),
    ("checkout", ("diff.relative", "true")), ("checkout", ("diff.external", "echo not-a-patch")),
    ("checkout", ("diff.noprefix", "true")),
    ("lane", None)])   # a lane's roll-back: the command names your checkout, not the lane
def test_the_way_back_brings_every_file_back_from_a_subfolder(tmp_path: Path, workplace: str,
                                                              config: tuple[str, str] | None,
                                                              fake_claude: FakeClaude) -> None:
    # A checkout whose path holds a space and a quote; the user pastes the command in src/,
    # whatever their git config says of diffs.
    (tmp_path / "it's mine" / "src").mkdir(parents=True)
    work = make_repo(tmp_path / "it's mine", "git", {"README.md": "hello\n", "src/lib.py": "\n"})
    (work / "tasks.md").write_text("- the task\n  FAKE: write a.txt a\n"
                                   "  FAKE: write src/b.txt b\n  FAKE: fail 9\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill",
                      "--max-attempts", "1")
    assert not (work / "a.txt").exists(), done.stdout + done.stderr
    command = re.search(r"`(git [^`]+)` brings", done.stdout + done.stderr)
    assert command is not None, done.stdout + done.stderr
    if config is not None:
        git(work, "config", *config)

    pasted = subprocess.run(["bash", "-c", command.group(1)], cwd=work / "src",
                            capture_output=True, text=True)

    assert pasted.returncode == 0, (command.group(1), pasted.stderr)
    assert (work / "a.txt").read_text() == "a\n"
    assert (work / "src" / "b.txt").read_text() == "b\n"
    assert not (work / "src" / "a.txt").exists()


@pytest.mark.parametrize("config", ["[diff]\n\tnoprefix = true\n",
                                    "[diff]\n\texternal = echo\n[color]\n\tui = always\n"])
def test_the_run_after_a_stop_brings_the_work_back_whatever_your_diff_config(
        tmp_path: Path, config: str, fake_claude: FakeClaude) -> None:
    # Your ~/.gitconfig shapes every `git diff`: the diff the next run applies is plain all
    # the same, or the work stays kept and the agent is paid again.
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    gitconfig.write_text(gitconfig.read_text() + config)
    work, out = stopped_in_the_check(tmp_path, "git", "- the task\n  FAKE: write a.txt a\n",
                                     "checkout", "ctrl_c")
    assert len(fake_claude.task_prompts()) == 1, out  # the agent was paid once
    assert (work / "a.txt").read_text() == "a\n"
