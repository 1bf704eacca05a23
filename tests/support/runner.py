"""agent-loop started the way a user starts it: a process of its own, for the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.support.repos import committed_plan, git_project


def agent_loop(cwd: Path, *args: str, plan: str | None = "tasks.md",
               env: Mapping[str, str] | None = None, timeout: float = 180,
               prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """`agent-loop PLAN ARGS…` in `cwd`, its output captured, no standard input.

    `env` is the whole environment (this process's by default); NO_COLOR=1 is added, so a test
    reads plain lines. `plan=None` leaves the plan out (`--status` over every plan, `--init`).
    `prefix` goes before the interpreter (`nohup`, a shell that ignores a signal)."""
    argv = [*prefix, sys.executable, "-m", "agentloop", *([plan] if plan else []), *args]
    return subprocess.run(argv, cwd=cwd, env={**(os.environ if env is None else env),
                                              "NO_COLOR": "1"},
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def done_by_git(tmp_path: Path, plan: str) -> Path:
    """tmp_path/project: a git repository with `plan` committed as tasks.md and every task of it
    done by a `--vcs git` run (the history a jj run may take over later)."""
    work = committed_plan(git_project(tmp_path, plan), plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    return work


def noting_git(work: Path, tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    """`agent-loop ARGS…` in `work` with a `git` first on PATH that notes each command it runs:
    (its standard output, the git commands, each without the `-C DIR` and the `-c` settings
    every one names first: agentloop.vcs.git.run.GUARD)."""
    import re
    import shutil

    shims, log = tmp_path / "shims", tmp_path / "git.log"
    shims.mkdir(parents=True, exist_ok=True)
    real = shutil.which("git")
    assert real is not None
    (shims / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (shims / "git").chmod(0o755)
    log.write_text("")
    done = agent_loop(work, *args, plan=None,
                      env={**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"},
                      timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, [re.sub(r"^-C \S+ (-c \S+ )*", "", line)
                         for line in log.read_text().splitlines()]


def noting_jj(work: Path, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str],
                                                                 list[str]]:
    """`agent-loop ARGS…` in `work` (the plan named in ARGS) with a `jj` first on PATH that
    notes each command it runs: (the run, the arguments of every jj process it started)."""
    import shutil

    shims, log = tmp_path / "jj-shims", tmp_path / "jj.log"
    shims.mkdir(parents=True, exist_ok=True)
    real = shutil.which("jj")
    assert real is not None
    # One record a process, opened by a record separator (a description has lines).
    (shims / "jj").write_text(f'#!/bin/sh\nprintf "\\036%s\\n" "$*" >> "{log}"\n'
                              f'exec "{real}" "$@"\n')
    (shims / "jj").chmod(0o755)
    log.write_text("")
    done = agent_loop(work, *args, plan=None,
                      env={**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"})
    return done, [record.rstrip("\n") for record in log.read_text().split("\x1e")[1:]]


def half_done_in_the_serial_lane(work: Path, directives: Path, task: str,
                                 args: Sequence[str]) -> tuple[subprocess.Popen[bytes], Path]:
    """`agent-loop tasks.md ARGS` started in `work`, once task `task`'s agent (on this run only,
    by the directives file `directives`) has written half.txt in the run's one lane and dawdles
    there a minute; the process and the lane."""
    from agentloop.vcs import lanes

    directives.write_text(json.dumps({task: ["FAKE: write half.txt half", "FAKE: pause 60"]}))
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(directives)},
                            start_new_session=True)
    lane = work / ".agent-loop" / "lanes" / (lanes.plan_key("tasks.md",
                                                            lanes.linked_checkout(work))
                                             + "-serial")
    deadline = time.monotonic() + 60
    while not (lane / "half.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (lane / "half.txt").exists()
    return tool, lane


@pytest.fixture
def plain_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """SHELL=/bin/sh, so the checks a run starts (through the user's $SHELL) do not depend on the
    developer's own shell and its startup files. A module uses it with
    `pytestmark = pytest.mark.usefixtures("plain_shell")` after importing it."""
    monkeypatch.setenv("SHELL", "/bin/sh")


def invoke(*argv: str, input: str | None = None) -> tuple[int, str, str]:
    """agent-loop's command run in this process (click's CliRunner): exit code, stdout, stderr.

    Faster than a process, for what needs no signal or terminal; an exception is raised, not
    turned into an exit code, so a crash shows its traceback. NO_COLOR=1 as in agent_loop."""
    from click.testing import CliRunner

    from agentloop.cli import command

    result = CliRunner().invoke(command, list(argv), input=input, catch_exceptions=False,
                                env={"NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr
