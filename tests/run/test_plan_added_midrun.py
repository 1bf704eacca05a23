"""Tasks added to the plan while a run works: the run does the tasks it set out to do, and its
closing count has the added ones (pending, left for the next run) as `--status` counts them
right after, wherever they were put: at the end, between two tasks, in a new group, beside a
removal, outside a `--task` range, in a `--parallel` run's lanes."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.plans import task
from tests.support.repos import init_repo
from tests.support.runner import agent_loop


def _edit(tmp_path: Path, plan: Path, *swaps: tuple[str, str]) -> str:
    """The shell command of an agent that edits the plan: each `old` replaced with `new`."""
    script = tmp_path / "edit.py"
    script.write_text(f"import sys\np = sys.argv[1]\nt = open(p).read()\n"
                      f"for old, new in {list(swaps)!r}:\n"
                      f"    assert old in t, old\n    t = t.replace(old, new, 1)\n"
                      f"open(p, 'w').write(t)\n")
    return shlex.join([sys.executable, str(script), str(plan)])


def _counts(text: str) -> dict[str, int]:
    """`3 completed, 1 pending` as {"completed": 3, "pending": 1} (statuses only: not the
    closing line's `1 removed from the plan`, a task the plan no longer has)."""
    pairs = [words.split(" ", 1) for words in text.split(", ")]
    return {pair[1]: int(pair[0]) for pair in pairs
            if len(pair) == 2 and pair[0].isdigit() and " " not in pair[1]}


def _closing_and_status(work: Path, *args: str) -> tuple[dict[str, int], dict[str, int], str]:
    """Run agent-loop with `args`, then --status: the closing line's counts, --status's
    totals, and what the run printed."""
    done = agent_loop(work, "--vcs", "git", "--no-distill", *args)
    out = done.stdout + done.stderr
    closing = next((line for line in done.stdout.splitlines()
                    if line.startswith("agent-loop done: ")), "")
    assert closing, out
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    totals = next(line for line in status.stdout.splitlines() if " task(s): " in line)
    assert "changed" not in status.stdout.splitlines()[0], status.stdout
    return (_counts(closing.removeprefix("agent-loop done: ").split(";")[0]),
            _counts(totals.split(" task(s): ", 1)[1].split(";")[0]), out)


ADDED = task("added")


@pytest.mark.parametrize("where", ["end", "middle", "new group"])
def test_a_task_added_midrun_is_counted_pending(work: Path, fake_claude: FakeClaude,
                                                tmp_path: Path, where: str) -> None:
    init_repo(work, "git")
    plan = work / "tasks.md"
    text = "## One\n" + task("one") + task("two") + task("three")
    swap = {"end": (task("three"), task("three") + ADDED),
            "middle": (task("three"), ADDED + task("three")),
            "new group": (task("three"), task("three") + "\n## New\n" + ADDED)}[where]
    plan.write_text(text.replace(task("one"), task("one", f"bash {_edit(tmp_path, plan, swap)}")))
    closing, status, out = _closing_and_status(work)
    assert closing == status == {"completed": 3, "pending": 1}, out
    assert not (work / "added.txt").exists(), out


def test_an_addition_beside_a_removal_is_counted_once(work: Path, fake_claude: FakeClaude,
                                                      tmp_path: Path) -> None:
    # Task two removed and a task added below task four in one save: the run skips task two
    # and leaves the added one for the next run; no task below the removal is counted twice.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, (task("two"), ""), (task("four"), task("four") + ADDED))
    plan.write_text(task("one", f"bash {edit}") + task("two") + task("three") + task("four"))
    closing, status, out = _closing_and_status(work)
    assert status == {"completed": 3, "pending": 1}, out
    assert "3 completed, 1 pending, 1 removed from the plan;" in out, out
    assert closing == status, out


def test_an_edit_the_run_took_in_counts_the_task_as_it_ran(work: Path, fake_claude: FakeClaude,
                                                           tmp_path: Path) -> None:
    # Task two reworded before it started (an edit, not a removal and an addition): it runs
    # as it reads now, and is counted once, completed.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, ("- [ ] task two\n", "- [ ] task two, reworded\n"))
    plan.write_text(task("one", f"bash {edit}") + task("two") + task("three"))
    closing, status, out = _closing_and_status(work)
    assert closing == status == {"completed": 3}, out


def test_a_task_added_outside_a_task_range(work: Path, fake_claude: FakeClaude,
                                          tmp_path: Path) -> None:
    # `--task 2-3` of four: task two's agent adds one between three and four, and one at the
    # end. Task one and four stay pending as the run left them; the two added are too.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, (task("four"), ADDED + task("four")),
                 (task("four"), task("four") + task("last")))
    plan.write_text(task("one") + task("two", f"bash {edit}") + task("three") + task("four"))
    closing, status, out = _closing_and_status(work, "--task", "2-3")
    assert closing == status == {"completed": 2, "pending": 4}, out
    assert not (work / "added.txt").exists() and not (work / "four.txt").exists(), out


def test_a_task_added_in_a_parallel_run(work: Path, fake_claude: FakeClaude,
                                        tmp_path: Path) -> None:
    # Two groups in two lanes: group A's first agent adds a task to group B (which may have
    # begun) and a new group C. Neither runs in this run; both are counted pending.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, (task("b2"), task("b2") + ADDED + "\n## C\n" + task("c")))
    plan.write_text("## A\n" + task("a1", f"bash {edit}") + task("a2")
                    + "\n## B\n" + task("b1") + task("b2"))
    closing, status, out = _closing_and_status(work, "--parallel", "2")
    assert closing == status == {"completed": 4, "pending": 2}, out


def test_a_removed_task_put_back_midrun_is_counted_as_the_plan_has_it(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task one's agent removes task two, which the run then does not start; task three's
    # agent puts it back. The plan at the run's end has it, pending, as --status says: the
    # closing count has it so, not as "removed from the plan".
    init_repo(work, "git")
    plan = work / "tasks.md"
    gone = _edit(tmp_path, plan, (task("two"), ""))
    back = tmp_path / "back.py"
    back.write_text(f"import sys\np = sys.argv[1]\nt = open(p).read()\n"
                    f"open(p, 'w').write(t.replace({task('three')!r}, "
                    f"{task('two') + task('three')!r}, 1))\n")
    plan.write_text(task("one", f"bash {gone}") + task("two")
                    + task("three", f"bash {shlex.join([sys.executable, str(back), str(plan)])}")
                    + task("four"))
    closing, status, out = _closing_and_status(work)
    assert 'task "task two" was removed from the plan' in out, out
    assert closing == status == {"completed": 3, "pending": 1}, out


def test_a_task_added_midrun_that_the_history_holds_done_is_counted_done(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task x, done by a first run, is deleted from the plan; the second run's first agent puts
    # it back at the end: the run's end finds its change in the history and marks it done, as
    # --status says right after, and its closing count says so too.
    init_repo(work, "git")
    plan = work / "tasks.md"
    old = "## Old\n" + task("x")
    plan.write_text(old)
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    edit = _edit(tmp_path, plan, (task("three"), task("three") + "\n" + old))
    plan.write_text("## New\n" + task("one", f"bash {edit}") + task("two") + task("three"))
    closing, status, out = _closing_and_status(work)
    assert status == {"completed": 4}, out
    assert closing == status, out


def test_a_group_renamed_midrun_runs_its_next_task_in_this_run(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Group B's first agent renames its heading, its tasks left as they were: the same group,
    # so B's second task runs in this run, not left pending as moved under another heading.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, ("## B\n", "## Bee\n"))
    plan.write_text("## A\n" + task("a1") + task("a2")
                    + "\n## B\n" + task("b1", f"bash {edit}") + task("b2"))
    closing, status, out = _closing_and_status(work, "--parallel", "2")
    assert status == {"completed": 4}, out
    assert "removed from the plan" not in out and "moved under the heading" not in out, out
    assert closing == status, out


def _both_headings_renamed_by_task_one(work: Path, tmp_path: Path) -> None:
    """A git repository whose plan's `## Backend` (one, two) and `## Frontend` (three, four)
    become `## Server` and `## Client` while task one's agent works."""
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, ("## Backend\n", "## Server\n"),
                 ("## Frontend\n", "## Client\n"))
    plan.write_text("## Backend\n" + task("one", f"bash {edit}") + task("two")
                    + "\n## Frontend\n" + task("three") + task("four"))


def test_both_headings_renamed_midrun_run_every_task(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # While task 1 runs, `## Backend` and `## Frontend` become `## Server` and `## Client`:
    # the run stopped after task 1 with "3 pending" and exit 0, every other task taken as
    # moved under another heading. Renamed in place, they are the same groups: all run now.
    _both_headings_renamed_by_task_one(work, tmp_path)
    closing, status, out = _closing_and_status(work)
    assert status == {"completed": 4}, out
    assert closing == status and "moved under the heading" not in out, out
    for name in ("two", "three", "four"):
        assert (work / f"{name}.txt").exists(), out


def test_a_task_moved_under_another_heading_midrun_still_waits_for_the_next_run(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Moved under another heading that was there (not a heading renamed): not carried across
    # groups, as before.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, (task("two"), ""),
                 ("## Frontend\n", "## Frontend\n" + task("two")))
    plan.write_text("## Backend\n" + task("one", f"bash {edit}") + task("two")
                    + "\n## Frontend\n" + task("three"))
    closing, status, out = _closing_and_status(work)
    assert 'task "task two" moved under the heading "Frontend"' in out, out
    assert status == {"completed": 2, "pending": 1} == closing, out


def test_headings_renamed_midrun_still_get_their_boxes_ticked(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # With --tick-boxes, each task of the renamed headings (the one at work when they were
    # renamed too) was said "not ticked: the plan no longer has it as it ran".
    _both_headings_renamed_by_task_one(work, tmp_path)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "not ticked" not in out, out
    plan = (work / "tasks.md").read_text()
    assert plan.count("- [x] task ") == 4, plan


def test_two_headings_swapped_midrun_run_each_task_once(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # While task one runs, `## Backend` and `## Frontend` swap names, the tasks unchanged and
    # in place: the records were paired as rewords of the other group's tasks, task one's
    # agent ran twice and a task was left to do. Each task keeps its record: each runs once.
    init_repo(work, "git")
    plan = work / "tasks.md"
    edit = _edit(tmp_path, plan, ("## Backend\n", "## TMP\n"),
                 ("## Frontend\n", "## Backend\n"), ("## TMP\n", "## Frontend\n"))
    plan.write_text("## Backend\n" + task("one", f"bash {edit}") + task("two")
                    + "\n## Frontend\n" + task("three") + task("four"))
    closing, status, out = _closing_and_status(work)
    runs = [c["stdin"] for c in fake_claude.task_runs()]
    assert {name: sum(f"task {name}\n" in prompt for prompt in runs)
            for name in ("one", "two", "three", "four")} == dict.fromkeys(
        ("one", "two", "three", "four"), 1), out
    for name in ("one", "two", "three", "four"):
        assert (work / f"{name}.txt").read_text().strip() == name, out
    assert status == {"completed": 4} == closing, out
    assert "reworded" not in out and "removed from the plan" not in out, out
