"""What --sandbox costs per task: the same plan run with it and without it, side by side.

Run: .venv/bin/python scripts/bench_sandbox.py [--tasks 20] [--rounds 3] [--real 4]

* The sandbox's own start: `bwrap <agent-loop's mounts> -- true` against `true`, per call.
* Orchestration: agent-loop runs --tasks tasks (git, one group) with scripts/instant_claude (an
  agent that writes one file and answers at once), with and without --sandbox, in alternating
  rounds; the per-task time and the ratio (the median round of each).
* The real agent: the pinned Claude Code CLI (tests/claude-cli) against the fake Messages API of
  tests/support/fakeapi.py, --real tasks with and without --sandbox (0 leaves it out). This is the
  figure a user sees: the sandbox's start against the agent's own.

Exits 0 either way: the figures are for reading. Needs bubblewrap (apt-get install bubblewrap).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
AGENT = REPO / "scripts" / "instant_claude"
CLAUDE = REPO / "tests" / "claude-cli" / "node_modules" / ".bin" / "claude"


def git(work: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)


def project(base: Path, tasks: int, line: str) -> Path:
    """A git repository with a plan of `tasks` tasks, each made from `line` with its number."""
    work = Path(tempfile.mkdtemp(dir=base))
    (work / "README.md").write_text("bench\n")
    (work / "tasks.md").write_text("## Bench\n" + "".join(
        f"- {line.format(i=i)}\n" for i in range(1, tasks + 1)))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "plan")
    return work


def timed_run(work: Path, env: dict[str, str], sandbox: bool) -> float:
    """Seconds one agent-loop run of the whole plan took."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill", "--sandbox" if sandbox else "--no-sandbox"],
                          cwd=work, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"agent-loop failed ({'with' if sandbox else 'without'} --sandbox): "
                 f"{done.stderr.strip()[-500:]}")
    return took


def side_by_side(title: str, base: Path, env: dict[str, str], tasks: int, rounds: int,
                 line: str) -> None:
    """Alternating rounds of the plan without and with --sandbox; the median per task."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for sandbox in (False, True):
            times[sandbox].append(timed_run(project(base, tasks, line), env, sandbox))
    plain = statistics.median(times[False]) / tasks
    boxed = statistics.median(times[True]) / tasks
    print(f"{title}: {tasks} tasks, median of {rounds} rounds")
    print(f"  per task without --sandbox  {plain * 1000:8.1f} ms")
    print(f"  per task with --sandbox     {boxed * 1000:8.1f} ms")
    print(f"  difference                  {(boxed - plain) * 1000:8.1f} ms a task, "
          f"ratio {boxed / plain:.2f}x")


def bwrap_start(calls: int = 50) -> None:
    """The cost of starting a process inside the sandbox, against starting it bare."""
    from agentloop.sandbox import Sandbox, open_sandbox

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / ".agent-loop").mkdir()
        box: Sandbox = open_sandbox(root, root / ".agent-loop")
        argvs = {"bare": ["true"], "bwrap": box.wrap(["true"], root, [])}
        for name, argv in argvs.items():
            start = time.perf_counter()
            for _ in range(calls):
                subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
            print(f"  start of `true` {name:6} {(time.perf_counter() - start) / calls * 1000:8.2f}"
                  f" ms a call ({calls} calls)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--real", type=int, default=4, help="tasks for the real CLI (0: none)")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("bubblewrap is not installed (apt-get install bubblewrap)")
    print("the sandbox's own start:")
    bwrap_start()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        home = base / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "AGENT_LOOP_CLAUDE": str(AGENT),
               "IS_SANDBOX": "1", "NO_COLOR": "1", "GIT_AUTHOR_NAME": "bench",
               "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
               "GIT_COMMITTER_EMAIL": "bench@example.com"}
        side_by_side("instant agent (agent-loop's own cost)", base, env, args.tasks,
                     args.rounds, "FILE=t{i}.txt")
        if args.real and CLAUDE.exists():
            from tests.support.claude_cli import claude_env
            from tests.support.fakeapi import FakeApi

            with FakeApi() as api:
                real = {**claude_env(base / "claude-home", api), "NO_COLOR": "1",
                        "AGENT_LOOP_CLAUDE": str(CLAUDE),
                        **{k: v for k, v in env.items() if k.startswith("GIT_")}}
                side_by_side("real Claude Code CLI against the fake API", base, real,
                             args.real, args.rounds, "WRITE t{i}.txt: task {i}")
        elif args.real:
            print(f"(the real CLI is not installed at {CLAUDE}: npm ci --prefix tests/claude-cli)")


if __name__ == "__main__":
    main()
