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


def make_task_file(folder: Path, tasks: int, checklist: bool) -> Path:
    """A task file with `tasks` tasks; every third one has continuation lines and a nested bullet.

    The default shape has groups of 25 tasks set off by blank lines. A `checklist` is one
    long run of `- [ ]` items with no blank line: the shape that once made marko quadratic.
    """
    lines = ["# Benchmark tasks", ""]
    for i in range(1, tasks + 1):
        if i % TASKS_PER_GROUP == 1 and not (checklist and i > 1):
            lines += ["", f"## Group {i // TASKS_PER_GROUP + 1}: work on `module_{i}`", ""]
        box = "[ ] " if checklist or i % 2 else ""
        lines.append(f"- {box}Task {i}: change *something* in `file_{i}.py` and run the tests")
        if i % 3 == 0:
            lines += ["  It needs a second line of explanation,", "  - and a nested bullet"]
    path = folder / f"tasks-{tasks}{'-checklist' if checklist else ''}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def time_first_parse(path: Path, expected: int) -> float:
    """Seconds for one `load` of `path`, after checking it found every task."""
    start = time.perf_counter()
    parsed = taskfile.load(path)
    elapsed = time.perf_counter() - start
    assert len(parsed.tasks) == expected, (len(parsed.tasks), expected)
    return elapsed


def bench_first_parse(folder: Path, checklist: bool) -> float:
    """Print the first-parse time of `load` for each size in SIZES; return t(10,000)/t(1,000)."""
    shape = "flat checklist" if checklist else "grouped tasks"
    times = {}
    for size in SIZES:
        times[size] = time_first_parse(make_task_file(folder, size, checklist), size)
        print(f"load, first parse, {shape}, {size:>6,} tasks: {times[size]:7.3f} s "
              f"({times[size] / size * 1000:.3f} ms/task)")
    ratio = times[10_000] / times[1_000]
    verdict = "ok" if ratio <= RATIO_GOAL else "TOO SLOW: not linear"
    print(f"  ratio t(10,000)/t(1,000): {ratio:.1f} (goal <= {RATIO_GOAL:.0f}): {verdict}")
    return ratio


# The timing of `--status` / `--dry-run` goes in its own bench_* function, called from main().
def main() -> int:
    """Run every benchmark in a temporary folder; exit 1 if parsing is not linear."""
    with tempfile.TemporaryDirectory(prefix="bench-parse-") as folder:
        ratios = [bench_first_parse(Path(folder), checklist) for checklist in (False, True)]
    return 0 if max(ratios) <= RATIO_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
