"""Time the first parse of generated task files: is `load` linear in the number of tasks?

Run: python scripts/bench_parse.py (from the repository, in the project's environment)

Each time is the best of REPEATS loads (the parser keeps no cache, so every load is a first
parse); single runs vary by 10% on a busy machine. Plain marko's own ratio is printed
for comparison: it sits near 10 by itself. Exits 1 only when a ratio is clearly not linear.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import marko

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentloop.plan.parse import load  # noqa: E402

SIZES = (100, 1_000, 10_000)
TASKS_PER_GROUP = 25
REPEATS = 3
RATIO_GOAL = 10.0
RATIO_FAIL = 15.0  # a quadratic parse gives 50-100 here


def make_task_file(folder: Path, tasks: int, checklist: bool) -> Path:
    """A task file with `tasks` tasks; every third one has continuation lines and a nested bullet.

    The default shape has groups of 25 tasks set off by blank lines. A `checklist` is one
    long run of `- [ ]` items with no blank line: the shape that made marko quadratic.
    """
    lines = ["# Benchmark tasks", ""]
    for i in range(1, tasks + 1):
        if i % TASKS_PER_GROUP == 1 and not (checklist and i > 1):
            lines += ["", f"## Group {i // TASKS_PER_GROUP + 1}: work on `module_{i}`", ""]
        box = "[ ] " if checklist else ""
        lines.append(f"- {box}Task {i}: change *something* in `file_{i}.py` and run the tests")
        if i % 3 == 0:
            lines += ["  It needs a second line of explanation,", "  - and a nested bullet"]
    path = folder / f"tasks-{tasks}{'-checklist' if checklist else ''}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def best_time(run: Callable[[], object]) -> float:
    """The shortest of REPEATS runs, in seconds."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def report(label: str, times: dict[int, float]) -> float:
    """Print the times for each size and the ratio t(10,000)/t(1,000); return the ratio."""
    for size, seconds in times.items():
        print(f"{label}, {size:>6,} tasks: {seconds:7.3f} s ({seconds / size * 1000:.3f} ms/task)")
    ratio = times[10_000] / times[1_000]
    verdict = ("ok" if ratio <= RATIO_GOAL else
               "above the goal" if ratio <= RATIO_FAIL else "NOT LINEAR")
    print(f"  ratio t(10,000)/t(1,000): {ratio:.1f} (goal <= {RATIO_GOAL:.0f}): {verdict}")
    return ratio


def bench_first_parse(folder: Path, checklist: bool) -> float:
    """Time `load` on each size in SIZES; print the times and return t(10,000)/t(1,000)."""
    times = {}
    for size in SIZES:
        path = make_task_file(folder, size, checklist)
        assert len(load(path).tasks) == size
        times[size] = best_time(functools.partial(load, path))
    return report(f"load, {'flat checklist' if checklist else 'grouped tasks'}", times)


def bench_plain_marko(folder: Path) -> float:
    """The same for marko's own parse of the grouped files, to show what marko costs alone."""
    texts = {size: make_task_file(folder, size, False).read_text("utf-8") for size in SIZES[1:]}
    times = {size: best_time(lambda text=text: marko.Markdown().parse(text))
             for size, text in texts.items()}
    return report("plain marko.parse, grouped tasks", times)


def bench_commands(folder: Path) -> None:
    """Wall time of `--status`, `--dry-run` and a run's start on an unchanged 10,000-task file.

    The state is written by the tool's own code as a first run leaves it; every task is then
    marked completed so the measured run starts, finds nothing to do, and ends: its time is
    the start-up cost a run pays before its first task.
    """
    from agentloop.state.project import load_state, open_project

    work = folder / "commands"
    work.mkdir()
    path = make_task_file(work, 10_000, False)
    (work / "tasks.md").write_bytes(path.read_bytes())
    project = open_project(Path("tasks.md"), work)
    state, _ = load_state(project)
    for task in state.tasks:
        task.status = "completed"
    project.store.save(state)
    env = {**os.environ, "AGENT_LOOP_CLAUDE": shutil.which("true") or "/bin/true",
           "IS_SANDBOX": "1"}
    program = [sys.executable, "-m", "agentloop", "tasks.md"]
    runs = {"--status": [*program, "--status"], "--dry-run": [*program, "--dry-run"],
            "run start (nothing left)": [*program, "--vcs", "none"],
            "python -c pass (floor)": [sys.executable, "-c", "pass"]}
    for label, argv in runs.items():
        seconds = best_time(functools.partial(subprocess.run, argv, cwd=work, env=env,
                                              check=True, stdout=subprocess.DEVNULL))
        verdict = "ok" if seconds < 0.3 else "MISSED"
        goal = "" if "floor" in label else f"  (goal < 0.3 s: {verdict})"
        print(f"{label:<26} on 10,000 tasks: {seconds:6.3f} s{goal}")


def main() -> int:
    """Run every benchmark in a temporary folder; exit 1 if parsing is clearly not linear."""
    with tempfile.TemporaryDirectory(prefix="bench-parse-") as folder:
        ratios = [bench_first_parse(Path(folder), checklist) for checklist in (False, True)]
        bench_plain_marko(Path(folder))
        bench_commands(Path(folder))
    return 0 if max(ratios) <= RATIO_FAIL else 1


if __name__ == "__main__":
    sys.exit(main())
