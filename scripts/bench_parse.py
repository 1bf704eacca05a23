"""Time the first parse of generated task files: is `load` linear in the number of tasks?

Run: /work/venv/bin/python scripts/bench_parse.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentloop import taskfile  # noqa: E402

SIZES = (100, 1_000, 10_000)
TASKS_PER_GROUP = 25
RATIO_GOAL = 10.0


def make_task_file(folder: Path, tasks: int) -> Path:
    """A task file with `tasks` tasks in groups of 25; every third task has continuation lines."""
    lines = ["# Benchmark tasks", ""]
    for i in range(1, tasks + 1):
        if i % TASKS_PER_GROUP == 1:
            lines += ["", f"## Group {i // TASKS_PER_GROUP + 1}: work on `module_{i}`", ""]
        lines.append(f"- [ ] Task {i}: change *something* in `file_{i}.py` and run the tests")
        if i % 3 == 0:
            lines += ["  It needs a second line of explanation,", "  - and a nested bullet"]
    path = folder / f"tasks-{tasks}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def time_first_parse(path: Path, expected: int) -> float:
    """Seconds for one `load` of `path`, after checking it found every task."""
    start = time.perf_counter()
    parsed = taskfile.load(path)
    elapsed = time.perf_counter() - start
    assert len(parsed.tasks) == expected, (len(parsed.tasks), expected)
    return elapsed


def bench_first_parse(folder: Path) -> dict[int, float]:
    """Print and return the first-parse time of `load` for each size in SIZES."""
    times = {}
    for size in SIZES:
        times[size] = time_first_parse(make_task_file(folder, size), size)
        print(f"load, first parse, {size:>6,} tasks: {times[size]:8.3f} s "
              f"({times[size] / size * 1000:.3f} ms/task)")
    ratio = times[10_000] / times[1_000]
    verdict = "ok" if ratio <= RATIO_GOAL else "TOO SLOW: not linear"
    print(f"ratio t(10,000)/t(1,000): {ratio:.1f} (goal <= {RATIO_GOAL:.0f}): {verdict}")
    return times


# The timing of `--status` / `--dry-run` goes in its own bench_* function, called from main().
def main() -> int:
    """Run every benchmark in a temporary folder; exit 1 if parsing is not linear."""
    with tempfile.TemporaryDirectory(prefix="bench-parse-") as folder:
        times = bench_first_parse(Path(folder))
    return 0 if times[10_000] / times[1_000] <= RATIO_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
