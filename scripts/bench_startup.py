"""What a user waits for when they type a command that runs no task: `--version`, `--help` and
`--status` of a finished plan, side by side with `python -c pass` on the same interpreter.

Run: .venv/bin/python scripts/bench_startup.py [--tasks 200] [--runs 9] [--before DIR]

A plan of `--tasks` tasks (groups of ten) is run to its end once with scripts/instant_claude,
`--vcs git --no-distill`, in a repository that ignores `.agent-loop/`, as a user's does; then
each command runs `--runs` times after one warm-up, interleaved with the others so a slow
moment of the machine weighs on all alike. Printed: the median wall time of each, and its ratio
to `python -c pass` (the floor no Python program starts under). `--before DIR` times an older
checkout's `agentloop` (`git worktree add ../before <rev>`) in the same rounds.

The goal of `--status` on a finished 200-task plan is <= 60 ms on the machine it was set on,
where `python -c pass` takes about 20 ms: about 3x the floor. The figures are for reading:
the script exits 0 either way (the machine is shared; compare figures of one run only).
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
AGENT = REPO / "scripts" / "instant_claude"
STATUS_GOAL_MS = 60.0


def sealed_env(home: Path) -> dict[str, str]:
    """Our own HOME and identities, the instant agent, nothing of the caller's settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "JJ_", "AGENT_LOOP_", "PYTHON"))}
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com",
               AGENT_LOOP_CLAUDE=str(AGENT), IS_SANDBOX="1", NO_COLOR="1")
    return env


def finished_plan(work: Path, tasks: int, env: dict[str, str]) -> None:
    """A git repository whose plan of `tasks` tasks has run to its end."""
    work.mkdir()
    (work / "README.md").write_text("bench\n")
    (work / ".gitignore").write_text(".agent-loop/\n")
    (work / "tasks.md").write_text("".join(
        (f"\n## Group {i // 10 + 1}\n" if i % 10 == 0 else "") + f"- FILE=t{i + 1:04d}.txt\n"
        for i in range(tasks)))
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "plan"]):
        subprocess.run(argv, cwd=work, env=env, check=True)
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill"], cwd=work, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run of {tasks} tasks failed: {done.stderr[-600:]}")


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one command, its output thrown away; it must succeed."""
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    """Time the commands and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout of an older agent-loop, timed in the same rounds")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        (folder / "home").mkdir()
        env = sealed_env(folder / "home")
        work = folder / "work"
        finished_plan(work, args.tasks, env)
        py = [sys.executable]
        commands = {"python -c pass": py + ["-c", "pass"],
                    "--version": py + ["-m", "agentloop", "--version"],
                    "--help": py + ["-m", "agentloop", "--help"],
                    "--status": py + ["-m", "agentloop", "tasks.md", "--status"],
                    "--status --json": py + ["-m", "agentloop", "tasks.md", "--status", "--json"]}
        envs = {name: env for name in commands}
        if args.before is not None:
            old = {**env, "PYTHONPATH": str(args.before.resolve())}
            for name in ("--version", "--help", "--status", "--status --json"):
                commands[f"before {name}"] = commands[name]
                envs[f"before {name}"] = old
        times: dict[str, list[float]] = {name: [] for name in commands}
        for name, argv in commands.items():  # the warm-up: byte code written, caches filled
            timed(argv, work, envs[name])
        for _ in range(args.runs):
            for name, argv in commands.items():
                times[name].append(timed(argv, work, envs[name]))
        floor = statistics.median(times["python -c pass"])
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; a finished plan of "
              f"{args.tasks} tasks; median of {args.runs} runs after one warm-up")
        for name, seen in times.items():
            mid = statistics.median(seen)
            goal = ""
            if name == "--status":
                goal = f"  (goal <= {STATUS_GOAL_MS:.0f} ms: " \
                       f"{'ok' if mid * 1000 <= STATUS_GOAL_MS else 'MISSED'})"
            print(f"  {name:<22} {mid * 1000:7.1f} ms  {mid / floor:5.2f}x python -c pass{goal}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
