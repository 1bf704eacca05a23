"""Output is not the run: a reader that goes away (`| head -1`) or a terminal that closes
(SIGHUP) never throws away a task whose agent finished."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project


def statuses(work: Path) -> list[str]:
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    return [t["status"] for t in state["tasks"]]


def subjects(work: Path) -> list[str]:
    return git(work, "log", "--format=%s").splitlines()


def test_a_pipe_closed_after_the_first_line_loses_nothing(tmp_path: Path,
                                                          fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--no-distill"], cwd=work, env={**os.environ, "NO_COLOR": "1"},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stderr is not None
    first = run.stdout.readline()  # what `| head -1` reads, and then it is gone
    run.stdout.close()
    err = run.stderr.read()
    assert run.wait(timeout=60) == 0, err
    assert "task(s) to run" in first
    # Nothing about the pipe, no traceback: only the run's outcome, as stdout is gone.
    assert err.startswith("agent-loop done: 2 completed;") and err.count("\n") == 1, err
    assert statuses(work) == ["completed", "completed"]
    assert (work / "a.txt").read_text() == "A\n" and (work / "b.txt").read_text() == "B\n"
    assert len(subjects(work)) == 3  # the initial commit and one per task
    events = (work / ".agent-loop" / "events.jsonl").read_bytes().splitlines()
    assert orjson.loads(events[-1])["type"] == "RunFinished"


def _hung_up(tmp_path: Path, prefix: list[str]) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A two-task run whose check hangs the terminal up (SIGHUP to agent-loop, its parent)
    once the first task's agent has written its file: after the agent, before the commit."""
    work = git_project(tmp_path, "- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    # (`hung` named in full: the check runs where the agent worked, a lane by default.)
    hung = work / "hung"
    check = f"if test -f a.txt && ! test -f {hung}; then touch {hung}; kill -HUP $PPID; fi; true"
    (work / ".gitignore").write_text("hung\n")
    git(work, "add", ".gitignore", "tasks.md")
    git(work, "commit", "-qm", "ignore")
    run = subprocess.run([*prefix, sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                          "--no-distill", "--check", check], cwd=work,
                         env={**os.environ, "NO_COLOR": "1"}, capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert hung.exists(), run.stdout + run.stderr
    return work, run


def test_sighup_after_the_agent_finished_commits_the_task_then_stops(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work, run = _hung_up(tmp_path, [])
    assert run.returncode == 130, run.stdout + run.stderr  # a clean stop, like Ctrl+C
    assert statuses(work) == ["completed", "pending"], run.stdout + run.stderr
    assert (work / "a.txt").read_text() == "A\n" and not (work / "b.txt").exists()
    assert len(subjects(work)) == 3  # initial, ignore, and task 1
    assert git(work, "status", "--porcelain") == ""


# A lane run whose one task writes README.md, which you have edited and not committed: its
# landing waits on you for the --lane-wait given last, then the group is held (exit 4).
HELD_RUN = [sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git", "--workplace", "lane",
            "--no-distill", "--allow-dirty", "--lane-wait"]


def held_by_your_edit(tmp_path: Path) -> Path:
    work = git_project(tmp_path, "## Docs\n- reword the readme\n"
                                 "  FAKE: write README.md the task's readme\n")
    (work / "README.md").write_text("my edit, not committed\n")
    return work


def test_once_stdout_is_gone_what_waits_on_you_and_the_end_go_to_stderr(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # `agent-loop tasks.md --lane-wait 3 2>err | head -1`: your uncommitted edit to README.md
    # holds the task that writes it; with stdout closed, only stderr can say so.
    work = held_by_your_edit(tmp_path)
    run = subprocess.Popen(HELD_RUN + ["3s"], cwd=work, env={**os.environ, "NO_COLOR": "1"},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           stdin=subprocess.DEVNULL)
    assert run.stdout is not None and run.stderr is not None
    first = run.stdout.readline()  # what `| head -1` reads, and then it is gone
    run.stdout.close()
    err = run.stderr.read()
    assert run.wait(timeout=60) == 4, err
    assert first  # the run's first line reached the reader
    lines = err.splitlines()
    waiting = [line for line in lines if "waiting since" in line]
    assert len(waiting) == 1 and "your uncommitted edits to README.md" in waiting[0], err
    assert sum("Docs stopped: task 1 (Docs) is held: your uncommitted edits to README.md"
               in line for line in lines) == 1, err
    assert sum(line.startswith("agent-loop done: 1 held;") for line in lines) == 1, err
    assert "Traceback" not in err
    # The task's work is kept on its lane, your edit is untouched: the next run lands it.
    assert statuses(work) == ["held"]
    assert (work / "README.md").read_text() == "my edit, not committed\n"


def test_while_stdout_is_open_nothing_goes_to_stderr_twice(tmp_path: Path,
                                                           fake_claude: FakeClaude) -> None:
    work = held_by_your_edit(tmp_path)
    run = subprocess.run(HELD_RUN + ["1s"], cwd=work, env={**os.environ, "NO_COLOR": "1"},
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 4, run.stdout + run.stderr
    assert "waiting since" in run.stdout and "waiting since" not in run.stderr
    assert "is held" in run.stdout and "is held" not in run.stderr
    assert "agent-loop done: 1 held;" in run.stdout and run.stderr == ""


def _closed(work: Path, fds: tuple[int, ...], *args: str) -> subprocess.CompletedProcess[str]:
    """agent-loop ARGS in `work`, started with the standard descriptors `fds` closed (a shell's
    `>&-`, a supervisor that closes them), the others captured."""
    def close() -> None:
        for fd in fds:
            os.close(fd)

    return subprocess.run([sys.executable, "-m", "agentloop", *args], cwd=work,
                          env={**os.environ, "NO_COLOR": "1"}, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, preexec_fn=close, timeout=120)


def test_a_run_started_with_its_output_closed_runs_and_exits_as_it_ends(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Started with stdout closed (`agent-loop tasks.md >&-`), Python has no sys.stdout: the run
    ended at once in "internal error: AttributeError" (no agent ran); with stderr closed, a run
    that did every task exited 1 on its last flush; `--status` and `--version` crashed too."""
    work = git_project(tmp_path, "- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    for fds in ((1,), (2,), (1, 2)):
        status = _closed(work, fds, "tasks.md", "--status")
        assert status.returncode == 0 and "Traceback" not in status.stderr, (fds, status.stderr)
        version = _closed(work, fds, "--version")
        assert version.returncode == 0 and "Traceback" not in version.stderr, (fds, version)
    done = _closed(work, (1,), "tasks.md", "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr, done.stderr
    assert statuses(work) == ["completed", "completed"]
    (work / "tasks.md").write_text((work / "tasks.md").read_text() + "- three\n"
                                   "  FAKE: write c.txt C\n")
    done = _closed(work, (2,), "tasks.md", "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout
    assert "agent-loop done: 3 completed" in done.stdout, done.stdout
    assert statuses(work) == ["completed"] * 3


def test_a_run_started_under_nohup_goes_on_when_the_terminal_hangs_up(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`nohup agent-loop tasks.md &`, then the terminal closes: you asked for the hangup to be
    ignored, and the run took it as a stop (exit 130 after its first task), as without nohup."""
    work, run = _hung_up(tmp_path, ["nohup"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert statuses(work) == ["completed", "completed"], run.stdout + run.stderr
