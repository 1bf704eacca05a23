"""What --parallel K buys: the same plan run sequentially and with --parallel K, with a slow
stand-in agent (scripts/instant_claude with INSTANT_CLAUDE_SLEEP), in a fresh git repository
each time; the wall time of the parallel run as a ratio of the sequential one.

Run: .venv/bin/python scripts/bench_parallel.py [--groups 4] [--tasks 3] [--sleep 2]
                                                [--parallel 4]

Goal: ratio <= 1/K + 0.10. Exits 0 either way: the figures are for reading.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "scripts" / "instant_claude"


def plan(groups: int, tasks: int) -> str:
    return "\n".join(f"## Group {g}\n" + "".join(f"- FILE=g{g}t{t}.txt\n"
                                                for t in range(1, tasks + 1))
                     for g in range(1, groups + 1))


def one_run(folder: Path, groups: int, tasks: int, sleep: float, parallel: int) -> float:
    folder.mkdir()
    env = {**os.environ, "INSTANT_CLAUDE_SLEEP": str(sleep), "AGENT_LOOP_CLAUDE": str(AGENT),
           "IS_SANDBOX": "1", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    git = ["git", "-C", str(folder)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True, env=env)
    (folder / "README.md").write_text("bench\n")
    subprocess.run([*git, "add", "README.md"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "start"], check=True, env=env)
    (folder / "tasks.md").write_text(plan(groups, tasks))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill", "--parallel", str(parallel)], cwd=folder, env=env,
                          capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"the run with --parallel {parallel} failed:\n{done.stdout}{done.stderr}")
    commits = subprocess.run([*git, "rev-list", "--count", "main"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert int(commits) == groups * tasks + 1, f"{commits} commits"
    return seconds


def main() -> None:
    ask = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ask.add_argument("--groups", type=int, default=4)
    ask.add_argument("--tasks", type=int, default=3)
    ask.add_argument("--sleep", type=float, default=2.0)
    ask.add_argument("--parallel", type=int, default=4)
    args = ask.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sequential = one_run(Path(tmp, "seq"), args.groups, args.tasks, args.sleep, 1)
        parallel = one_run(Path(tmp, "par"), args.groups, args.tasks, args.sleep, args.parallel)
    ratio = parallel / sequential
    goal = 1 / args.parallel + 0.10
    print(f"{args.groups} groups x {args.tasks} tasks, agent {args.sleep:g} s a run")
    print(f"sequential:   {sequential:6.2f} s")
    print(f"--parallel {args.parallel}: {parallel:6.2f} s")
    met = "met" if ratio <= goal else "NOT met"
    print(f"ratio:        {ratio:6.3f}  (goal <= {goal:.3f}: {met})")


if __name__ == "__main__":
    main()
