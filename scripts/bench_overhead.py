"""What agent-loop costs on top of the agent: measured side by side with a bare shell loop.

Run: .venv/bin/python scripts/bench_overhead.py [--sizes 10,200] [--backends git,jj]
                                               [--flood-lines 500000] [--before DIR]
                                               [--workplace lane|checkout]

* The figures (the ones the goals are for): against the loop a person writes (the agent, then
  `git add -A && git commit`), the floor a side-by-side benchmark against ralphex counts too,
  whole runs from the command line, start-up included: the cost per task as the slope from the
  smallest size to the largest, and the whole run at the smallest size. The repositories are
  set up as a user's: the plan committed, `.agent-loop/` in .gitignore. `--before DIR`
  measures an older checkout in the same rounds (`git worktree add ../before <rev>`), so
  before and after come from one run. Beside the smallest run's wall time, its CPU (user and
  system, of agent-loop and every process it started, against the person's loop's own): the
  figure a loaded machine blurs least.
* Processes per task: the git or jj commands agent-loop ran for one task in steady state
  (traced from the tool itself), next to the person's loop's two.
* A diagnostic, not a cost: agent-loop's own Python per task, over a bash loop that runs the
  same agent and replays the backend's short way (git: `add --all --verbose`, `commit`; jj:
  its five commands), start-up left out. It leaves out the commands agent-loop chose to run
  beyond those (the trace above shows them), so it is never quoted as agent-loop's cost.
* Growth: the per-task cost at the largest size over the one at the smallest.
* Peak RSS of agent-loop (and the agent; os.wait4) while the agent prints ~1 KB lines
  (500,000 of them: 500 MB).
* `--status` and `--dry-run` on the largest run (best of 3).
* Checks: the per-task cost of `--check true` (a check that takes no time) over a run without
  it, against the cost of starting that one check process (goal: at most 1.5x it).

Goals: per task <= 1.15x the person's loop; the smallest run <= 1.5x the person's loop;
growth <= 1.2x; RSS < 80 MB. Exits 0 either way: the
figures are for reading. Runs without a commit-message call per task (`--no-distill`): that is
one more agent call, the product's choice, not orchestration.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "scripts" / "instant_claude"
GOALS = {"per task": 1.15, "small run": 1.5, "growth": 1.2, "rss_mb": 80.0, "checks": 1.5}
PER_GROUP = 10
SYSTEM_PROMPT = "(agent-loop's rules; the bare loop passes a placeholder)"

# The commands the backends run per task (see `trace`), replayed by bash with the same arguments.
GIT_LOOP = r"""
set -eu
export LC_ALL=C GIT_LITERAL_PATHSPECS=0
for i in $(seq -f %04g 1 "$N"); do
    g=$(( (10#$i - 1) / 10 + 1 ))
    msg="agent-loop: Group $g / FILE=t$i.txt"
    "$AGENT" -p --output-format stream-json --verbose --dangerously-skip-permissions \
        --model opus --append-system-prompt "$SYSTEM_PROMPT" <<< "FILE=t$i.txt" > "$LOGS/$i.jsonl"
    git add --all --verbose -- . ':(exclude,literal).agent-loop' ':(exclude,literal)tasks.md' \
        > /dev/null
    git -c core.hooksPath=/dev/null -c gc.auto=0 -c maintenance.auto=false commit --quiet \
        --no-verify --cleanup=verbatim -m "$msg"
done
"""

# The loop a person would write: the agent, then commit whatever changed.
PLAIN_LOOP = r"""
set -eu
for i in $(seq -f %04g 1 "$N"); do
    g=$(( (10#$i - 1) / 10 + 1 ))
    "$AGENT" -p --output-format stream-json --verbose --dangerously-skip-permissions \
        --model opus --append-system-prompt "$SYSTEM_PROMPT" <<< "FILE=t$i.txt" > "$LOGS/$i.jsonl"
    git add -A && git commit -qm "agent-loop: Group $g / FILE=t$i.txt"
done
"""

PLAIN_JJ_LOOP = r"""
set -eu
for i in $(seq -f %04g 1 "$N"); do
    g=$(( (10#$i - 1) / 10 + 1 ))
    "$AGENT" -p --output-format stream-json --verbose --dangerously-skip-permissions \
        --model opus --append-system-prompt "$SYSTEM_PROMPT" <<< "FILE=t$i.txt" > "$LOGS/$i.jsonl"
    jj commit -m "agent-loop: Group $g / FILE=t$i.txt" > /dev/null 2>&1
done
"""

JJ_LOOP = r"""
set -eu
jj() { command jj --no-pager --color=never --config "$AUTOTRACK" "$@"; }
for i in $(seq -f %04g 1 "$N"); do
    g=$(( (10#$i - 1) / 10 + 1 ))
    msg="agent-loop: Group $g / FILE=t$i.txt"
    jj log --no-graph -r @ -T "$INFO" > /dev/null
    if [ "$i" = 0001 ]; then jj new -m "$msg" 2> /dev/null
    else jj describe -m "$msg" 2> /dev/null; fi
    id=$(jj log --no-graph -r @ -T "$INFO")
    id=${id%%$'\t'*}
    "$AGENT" -p --output-format stream-json --verbose --dangerously-skip-permissions \
        --model opus --append-system-prompt "$SYSTEM_PROMPT" <<< "FILE=t$i.txt" > "$LOGS/$i.jsonl"
    jj log --no-graph -r "present($id) | @" -T "$INFO" > /dev/null
    jj new "$id" 2> /dev/null
    command jj --no-pager --color=never --ignore-working-copy log --no-graph -r ::@ \
        -T change_id > /dev/null
done
"""


def env_for(folder: Path) -> dict[str, str]:
    """A sealed environment: our own HOME and identities, the instant agent, jj found."""
    home = folder / "home"
    home.mkdir(exist_ok=True)
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    (home / "jj.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "JJ_"))}
    tools = Path.home() / ".cache" / "agent-loop-tools"
    jj_dirs = sorted(tools.glob("jj-*/bin"), reverse=True)
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com",
               JJ_USER="Bench", JJ_EMAIL="bench@example.com", JJ_CONFIG=str(home / "jj.toml"),
               AGENT_LOOP_CLAUDE=str(AGENT), IS_SANDBOX="1", NO_COLOR="1",
               PATH=os.pathsep.join([str(d) for d in jj_dirs[:1]] + [env["PATH"]]))
    return env


def new_repo(folder: Path, backend: str, tasks: int, env: dict[str, str]) -> Path:
    """A repository with README.md committed and a task file of `tasks` tasks, ten a group."""
    work = folder
    work.mkdir(parents=True)
    (work / "README.md").write_text("bench\n")
    # As a user's repository is: agent-loop's folder ignored, the plan committed (the peer
    # benchmark sets them up so too; an ignored .agent-loop/ once cost three git processes a
    # task that a repository without the line never showed).
    (work / ".gitignore").write_text(".agent-loop/\n")
    lines = []
    for i in range(1, tasks + 1):
        if i % PER_GROUP == 1:
            lines.append(f"\n## Group {(i - 1) // PER_GROUP + 1}\n")
        lines.append(f"- FILE=t{i:04d}.txt\n")
    (work / "tasks.md").write_text("".join(lines))
    if backend == "git":
        for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                     ["git", "commit", "-qm", "initial"]):
            subprocess.run(argv, cwd=work, env=env, check=True)
    else:
        subprocess.run(["jj", "git", "init"], cwd=work, env=env, check=True,
                       capture_output=True)
        subprocess.run(["jj", "commit", "-m", "initial"], cwd=work, env=env, check=True,
                       capture_output=True)
    return work


# Extra arguments of every agent-loop run measured (`--workplace checkout`, say).
EXTRA: list[str] = []


def tool(work: Path, backend: str, env: dict[str, str], *extra: str,
         source: Path | None = None) -> float:
    """Wall seconds of one `agent-loop tasks.md` run (`source`: of that checkout's agentloop)."""
    extra = (*EXTRA, *extra)
    if source is not None:
        env = {**env, "PYTHONPATH": str(source)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", backend,
                           "--no-distill", *extra], cwd=work, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"agent-loop failed in {work}: {done.stderr}")
    return seconds


def bare(work: Path, backend: str, tasks: int, env: dict[str, str], plain: bool = False) -> float:
    """Wall seconds of the bash loop over the same tasks (`plain`: the loop a person writes)."""
    from agentloop.vcs.jj.run import INFO

    scratch = work.parent / f"{work.name}-scratch"
    (scratch / "logs").mkdir(parents=True)
    autotrack = 'snapshot.auto-track=' + json.dumps('(all()) ~ (root:".agent-loop" | '
                                                    'root-file:"tasks.md")')
    loop_env = {**env, "N": str(tasks), "AGENT": str(AGENT), "SCRATCH": str(scratch),
                "LOGS": str(scratch / "logs"), "INFO": INFO, "AUTOTRACK": autotrack,
                "SYSTEM_PROMPT": SYSTEM_PROMPT}
    started = time.perf_counter()
    script = (PLAIN_LOOP if backend == "git" else PLAIN_JJ_LOOP) if plain else \
        GIT_LOOP if backend == "git" else JJ_LOOP
    subprocess.run(["bash", "-c", script], cwd=work, env=loop_env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def trace(folder: Path, backend: str, env: dict[str, str]) -> list[str]:
    """The VCS commands agent-loop runs for one task in steady state (the third of three)."""
    shim = folder / "trace-bin"
    shim.mkdir(parents=True)
    log = folder / "trace.log"
    real = shutil.which(backend, path=env["PATH"])
    # One record a call, opened by a record separator: a commit message has lines of its own.
    (shim / backend).write_text(f'#!/bin/sh\n{{ printf "\\036"; printf "%s\\t" "$@"; }} >> {log}\n'
                                f'exec {real} "$@"\n')
    (shim / backend).chmod(0o755)
    work = new_repo(folder / "trace", backend, 3, env)
    log.write_text("")
    tool(work, backend, {**env, "PATH": f"{shim}{os.pathsep}{env['PATH']}"})
    calls = []
    for call in log.read_text().split("\x1e")[1:]:
        words = call.rstrip("\t").split("\t")
        while "--config" in words:  # jj: leave out the global options and the config values
            words = words[words.index("--config") + 2:]
        # git: likewise, and the folder each command names (`git -C DIR ...`)
        while words[:1] in (["-c"], ["-C"], ["--no-optional-locks"]):
            words = words[2:] if words[0] in ("-c", "-C") else words[1:]
        if backend == "jj" and words[:1] == ["new"] and words[1:2] != ["-m"]:
            words = ["new", "<the task's change>"]
        calls.append(" ".join(words[:2] if backend == "jj" else words[:1]))
    # A task's last command: git commits; jj, having committed the task's change in its lane,
    # rebases the lane's next change onto it.
    last = [i for i, c in enumerate(calls) if c == ("commit" if backend == "git" else "rebase -s")]
    if len(last) < 3:
        raise SystemExit(f"{backend}: no three tasks' last commands in {calls}")
    return calls[last[1] + 1: last[2] + 1]


def with_cpu(run: Callable[..., float], *args: Any, **kwargs: Any) -> tuple[float, float]:
    """(wall, CPU) seconds of `run(*args, **kwargs)`: the wall time it returns, and the user
    and system time of the processes it started and waited for (agent-loop, its git and its
    agents; the person's loop's bash, git and agents), which a loaded machine inflates less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run(*args, **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(folder: Path, backend: str, sizes: list[int], env: dict[str, str],
            before: Path | None = None) -> dict[int, dict[str, float]]:
    """For each size, in seconds: agent-loop's run and its start-up (a run with nothing left
    to do), the bare loop, and the person's loop; each the median of several rounds that run
    all of them in turn, so a slow moment of the machine weighs on every side alike (7 rounds
    up to 100 tasks, where one start-up's jitter is a large part of a task's cost; else 3: on
    a shared machine one round of 1,000 tasks has come out anywhere from 0.87x to 1.18x)."""
    results = {}
    for size in sizes:
        rounds = 7 if size <= 100 else 3
        seen: dict[str, list[float]] = {"tool": [], "idle": [], "bare": [], "plain": [],
                                        "before": [], "tool cpu": [], "plain cpu": [],
                                        "before cpu": []}
        for r in range(rounds):
            work = new_repo(folder / f"{backend}-{size}-{r}-tool", backend, size, env)
            for key, value in zip(("tool", "tool cpu"), with_cpu(tool, work, backend, env)):
                seen[key].append(value)
            seen["idle"].append(tool(work, backend, env))  # nothing left to do
            if before is not None:
                old = new_repo(folder / f"{backend}-{size}-{r}-before", backend, size, env)
                for key, value in zip(("before", "before cpu"),
                                      with_cpu(tool, old, backend, env, source=before)):
                    seen[key].append(value)
            plain = new_repo(folder / f"{backend}-{size}-{r}-bare", backend, size, env)
            seen["bare"].append(bare(plain, backend, size, env))
            person = new_repo(folder / f"{backend}-{size}-{r}-plain", backend, size, env)
            for key, value in zip(("plain", "plain cpu"),
                                  with_cpu(bare, person, backend, size, env, plain=True)):
                seen[key].append(value)
        # agent-loop's own part is a difference: the median of the differences, not of each.
        work_part = statistics.median(t - i for t, i in zip(seen["tool"], seen["idle"]))
        mid = {k: statistics.median(v) if v else float("inf") for k, v in seen.items()}
        mid["tool"] = mid["idle"] + work_part
        results[size] = mid
        person = f", the person's loop {mid['plain']:7.2f}s" if seen["plain"] else ""
        person += f", before {mid['before']:7.2f}s" if seen["before"] else ""
        print(f"  {backend} {size:>5} tasks ({rounds} round{'s' * (rounds > 1)}, medians): "
              f"agent-loop {mid['tool']:7.2f}s (start-up {mid['idle']:.2f}s), bare loop "
              f"{mid['bare']:7.2f}s{person}", flush=True)
    return results


PERSON_PROCESSES = {"git": 2, "jj": 1}
# The loop a person writes, per backend: the agent, then one commit of whatever changed.
PERSON = {"git": "the agent, then `git add -A && git commit`", "jj": "the agent, then `jj commit`"}


def report(backend: str, results: dict[int, dict[str, float]]) -> None:
    """The figures against the person's loop first (the goals are for them), then the growth,
    then agent-loop's own Python over a replay of its VCS commands (a diagnostic)."""
    print(f"\n{backend}: against the loop a person writes ({PERSON[backend]}), whole runs "
          "from the command line, start-up included")
    per_task = {}
    for size, r in results.items():
        per_task[size] = ((r["tool"] - r["idle"]) / size, r["bare"] / size)
    small, large = min(per_task), max(per_task)
    floors(results, small, large)
    if small != large:
        growth = per_task[large][0] / per_task[small][0]
        bare_growth = per_task[large][1] / per_task[small][1]
        print(f"  growth, per-task cost at {large:,} / at {small:,}: agent-loop {growth:.2f}x "
              f"({verdict(growth, GOALS['growth'])}); the replay loop itself "
              f"{bare_growth:.2f}x, so agent-loop's part grew {growth / bare_growth:.2f}x "
              f"({(per_task[small][0] - per_task[small][1]) * 1000:.1f} -> "
              f"{(per_task[large][0] - per_task[large][1]) * 1000:.1f} ms/task)")
    print("  diagnostic (not a cost: it leaves out the VCS commands agent-loop chose beyond "
          "the short way's, and its start-up): its own Python per task over a loop replaying "
          "the short way's commands")
    for size, (tool_task, bare_task) in per_task.items():
        print(f"  {size:>5} tasks: agent-loop {tool_task * 1000:7.1f} ms/task, replay "
              f"{bare_task * 1000:7.1f} ms/task: {tool_task / bare_task:5.2f}x")


def floors(results: dict[int, dict[str, float]], small: int, large: int) -> None:
    """The figures against the loop a person writes (agent, then `git add -A && git commit`),
    whole runs from the command line, start-up included: the slope per task from the smallest
    size to the largest, and the whole run at the smallest size; for this checkout and, with
    --before, for an older one measured in the same rounds."""
    s, b = results[small], results[large]
    if s["plain"] == float("inf"):
        return
    plain_slope = (b["plain"] - s["plain"]) / (large - small) if large != small else None
    for name, key in (("agent-loop", "tool"), ("before", "before")):
        if s[key] == float("inf"):
            continue
        line = (f"  {name:>10}: {small}-task run {s[key]:.3f}s against {s['plain']:.3f}s: "
                f"{s[key] / s['plain']:5.2f}x ({verdict(s[key] / s['plain'], GOALS['small run'])})")
        if plain_slope:
            slope = (b[key] - s[key]) / (large - small)
            line += (f"; per task {small}->{large}: {slope * 1000:.1f} ms against "
                     f"{plain_slope * 1000:.1f} ms: {slope / plain_slope:5.2f}x "
                     f"({verdict(slope / plain_slope, GOALS['per task'])})")
        print(line)
        print(f"  {'':>10}  its CPU (user and system, with every process it started, the "
              f"agents' too): {s[key + ' cpu']:.3f}s against {s['plain cpu']:.3f}s: "
              f"{s[key + ' cpu'] / s['plain cpu']:5.2f}x")


def verdict(value: float, goal: float) -> str:
    return f"goal <= {goal}: {'ok' if value <= goal else 'MISSED'}"


def peak_rss(folder: Path, env: dict[str, str], lines: int) -> None:
    """Peak RSS (of agent-loop or the agent, whichever is larger) while the agent floods."""
    work = new_repo(folder / "flood", "git", 1, env)
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--no-distill"], cwd=work, stdout=subprocess.DEVNULL,
                             env={**env, "INSTANT_CLAUDE_FLOOD": str(lines)})
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    raw = sum(p.stat().st_size for p in (work / ".agent-loop" / "logs").glob("*.jsonl"))
    mb = usage.ru_maxrss / 1024
    print(f"\npeak RSS while the agent printed {raw / 1e6:,.0f} MB in {lines:,} lines: {mb:.0f} MB "
          f"(goal < {GOALS['rss_mb']:.0f} MB: {'ok' if mb < GOALS['rss_mb'] else 'MISSED'}); "
          f"{seconds:.1f}s, exit {os.waitstatus_to_exitcode(status)}")
    shutil.rmtree(work / ".agent-loop" / "logs")  # a gigabyte of logs


def commands(work: Path, env: dict[str, str], tasks: int) -> None:
    """`--status` and `--dry-run` on a finished run, best of 3."""
    for mode in ("--status", "--dry-run"):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", mode], cwd=work,
                           env=env, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - started)
        print(f"{mode:<9} on a finished {tasks:,}-task run: {min(times):.3f}s")


def checks_cost(folder: Path, env: dict[str, str], tasks: int) -> None:
    """What `--check true` adds per task, next to what starting the check's process costs."""
    from agentloop.run import checks

    runs = {}
    for extra in ((), ("--check", "true")):
        best = float("inf")
        for r in range(3):
            work = new_repo(folder / f"checks-{len(extra)}-{r}", "git", tasks, env)
            best = min(best, tool(work, "git", env, *extra))
        runs[bool(extra)] = best
    log = folder / "checks-start.log"
    started = time.perf_counter()
    for _ in range(tasks):
        checks.run_checks(["true"], folder, log, 60)
    start = (time.perf_counter() - started) / tasks
    # One baseline round runs before the first task: tasks + 1 check runs in all.
    added = (runs[True] - runs[False]) / (tasks + 1)
    print(f"\n--check true on {tasks} git tasks: +{added * 1000:.1f} ms per task; starting the "
          f"check alone takes {start * 1000:.1f} ms: {added / start:.2f}x "
          f"({verdict(added / start, GOALS['checks'])})")


def main() -> int:
    """Measure everything asked for, printing as it goes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--backends", default="git,jj")
    parser.add_argument("--flood-lines", type=int, default=500_000)
    parser.add_argument("--check-tasks", type=int, default=100,
                        help="tasks of the --check true measurement (0: skip it)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout of an older agent-loop (e.g. `git worktree add "
                             "../before <rev>`), measured in the same rounds")
    parser.add_argument("--workplace", choices=("lane", "checkout"), default=None,
                        help="where the agent works in every run measured (default: agent-loop's "
                             "own default, a lane)")
    args = parser.parse_args()
    if args.workplace:
        EXTRA.extend(["--workplace", args.workplace])
    sizes = [int(s) for s in args.sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    env = env_for(folder)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {folder}")
    try:
        for backend in args.backends.split(","):
            per_task = trace(folder / f"{backend}-trace", backend, env)
            print(f"\n{backend}: {len(per_task)} {backend} processes per task, traced from "
                  f"agent-loop (the person's loop starts {PERSON_PROCESSES[backend]}): "
                  f"{', '.join(per_task)}")
            report(backend, measure(folder, backend, sizes, env, args.before))
        largest = folder / f"{args.backends.split(',')[0]}-{max(sizes)}-0-tool"
        print()
        commands(largest, env, max(sizes))
        if args.check_tasks:
            checks_cost(folder, env, args.check_tasks)
        if args.flood_lines:
            peak_rss(folder, env, args.flood_lines)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
