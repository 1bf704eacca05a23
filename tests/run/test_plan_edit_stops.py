"""A plan edited while a `--parallel` run works (a task put above the others, one removed),
the lines that stop a group or the run name tasks as the plan reads now, as `--status` does
right after: a held group's note, a task still landing, one that conflicts with the main line."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop

# An agent's edit of the plan: a new task put above the first (under a heading of its own when
# the plan has headings), which renumbers every task below.
ABOVE = """
import sys
plan = sys.argv[1]
lines = open(plan).read().splitlines(keepends=True)
at = next(i for i, line in enumerate(lines) if line.startswith(("- ", "## ")))
task = "- [ ] task put above\\n  FAKE: write above.txt above\\n"
lines.insert(at, "## First\\n" + task + "\\n" if lines[at].startswith("## ") else task)
open(plan, "w").write("".join(lines))
"""


def _above(tmp_path: Path) -> str:
    (tmp_path / "above.py").write_text(ABOVE)
    return shlex.join([sys.executable, str(tmp_path / "above.py")])


def _your_edit_of_f(work: Path) -> None:
    """A git repository with f.txt committed and your edit of it not committed."""
    init_repo(work, "git")
    (work / "f.txt").write_text("base\n")
    git(work, "add", "f.txt")
    git(work, "commit", "-qm", "f")
    (work / "f.txt").write_text("your edit, not committed\n")


def _failed(status: str) -> list[int]:
    """The numbers --status gives its failed tasks."""
    return [int(line.split()[0]) for line in status.splitlines()
            if line.split()[1:2] == ["failed"]]


def test_a_held_group_is_named_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task right's agent puts a task above the others: task left is task 2 when the run reads
    # the plan again, as group Later starts. Task left's agent waits for task later's, so
    # that its landing, held on your edit of f.txt, comes after that read.
    _your_edit_of_f(work)
    plan, marker = work / "tasks.md", tmp_path / "later-ran"
    plan.write_text("## Left\n- [ ] task left\n  FAKE: write f.txt from the task\n"
                    f"  FAKE: bash while [ ! -e {marker} ]; do sleep 0.1; done\n"
                    "## Right\n- [ ] task right\n  FAKE: write r.txt right\n"
                    f"  FAKE: bash {_above(tmp_path)} {plan}\n"
                    "## Later\n- [ ] task later\n  FAKE: write l.txt later\n"
                    f"  FAKE: bash touch {marker}\n")
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill",
                      "--allow-dirty", "--lane-wait", "1s")
    text = done.stdout
    assert done.returncode == 4, text + done.stderr
    status = agent_loop(work, "--status").stdout
    assert any(line.split()[:2] == ["2", "held"] and line.endswith("> task left")
               for line in status.splitlines()), status
    assert [t["status"] for t in state_of(work)["tasks"]] == \
        ["pending", "held", "completed", "completed"], status
    # Live, as the `[3/3] task 4` line above it names task later: by the plan as last read.
    assert "[Later] [3/3] task 4: Later > task later" in text, text
    assert "Left stopped: task 2 (Left) is held: your uncommitted edits to f.txt" in text, text
    # One closing line says it, naming the task as --status does; none of the group's
    # said it again.
    looks = [line for line in text.splitlines() if line.startswith("look at: ")]
    assert [line for line in looks if "held" in line] == [
        next(line for line in looks if line.startswith(
            "look at: task 2 is held: your uncommitted edits to f.txt"))], text
    assert "not completed: task(s) 2;" in text, text


def test_the_stuck_stop_names_the_failed_tasks_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task one's agent puts a task above and fails; tasks two and three fail too: the stop
    # names them 2, 3 and 4, as --status does right after, not 1, 2 and 3.
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text(f"# Plan\n\n- [ ] task one\n  FAKE: bash {_above(tmp_path)} {plan}\n"
                    "  FAKE: fail 9\n- [ ] task two\n  FAKE: fail 9\n"
                    "- [ ] task three\n  FAKE: fail 9\n- [ ] task four\n  FAKE: write 4.txt 4\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1",
                      "--max-failures", "3")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "the agent seems stuck: 3 tasks failed in a row (tasks 2, 3, 4)" in said, said
    status = agent_loop(work, "--status").stdout
    assert _failed(status) == [2, 3, 4], status


def test_a_held_task_s_command_runs_the_same_tasks_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # `--task 1-2`: task one's agent puts a task above, so the two are tasks 2 and 3 now; task
    # two, held on your edit, says the command that goes on with them as `--task 2-3` (as
    # given, it would run the task put above and leave task two), in the closing line and in
    # its record, which --status shows right after.
    _your_edit_of_f(work)
    plan = work / "tasks.md"
    plan.write_text(f"- [ ] task one\n  FAKE: write one.txt one\n"
                    f"  FAKE: bash {_above(tmp_path)} {plan}\n"
                    "- [ ] task two\n  FAKE: write f.txt from the task\n")
    done = agent_loop(work, "--vcs", "git", "--task", "1-2", "--workplace", "lane",
                      "--no-distill", "--allow-dirty", "--lane-wait", "1s")
    text = done.stdout
    assert done.returncode == 4, text + done.stderr
    held = next(line for line in text.splitlines() if line.startswith("look at: task 3 is held"))
    assert held.endswith("--task 2-3 --workplace lane --no-distill --allow-dirty "
                         "--lane-wait 1s`"), held
    status = agent_loop(work, "--status").stdout
    error = next(line for line in status.splitlines() if "error: held" in line)
    assert "--task 2-3 " in error, status


def test_the_budget_stop_names_the_task_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task one's agent puts a task above and spends the budget: the stop names task two by
    # its number now (3), as --status does right after, not 2 (the task put above).
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text(f"- [ ] task one\n  FAKE: write one.txt one\n"
                    f"  FAKE: bash {_above(tmp_path)} {plan}\n"
                    "- [ ] task two\n  FAKE: write two.txt two\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--budget", "0.01")
    said = done.stdout + done.stderr
    assert "budget reached before task 3: spent $0.0100" in said, said
    assert "before task 2" not in said, said
    status = agent_loop(work, "--status").stdout
    assert any(line.split()[:2] == ["3", "pending"] and line.endswith("> task two")
               for line in status.splitlines()), status


@pytest.mark.parametrize("task", [("--task", "2-4"), ("--task", "2, 3, 4"), ("--task=2, 3-4",)],
                         ids=["range", "spaced-list", "equals-spaced"])
def test_the_stop_s_continue_command_runs_the_same_tasks_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path, task: tuple[str, ...]) -> None:
    # `--task 2-4`: task two's agent puts a task above and fails, and so do three and four:
    # the run stops as stuck, and its "Continue with" line must run tasks two to four as the
    # plan numbers them now (3-5), not the task put above (now task 1 is it; 2 is task one).
    # Spelt `--task '2, 3, 4'` (the CLI takes a space after a comma), the line said it as
    # typed, quoted, which ran the task put above and not task four.
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text("# Plan\n\n- [ ] task one\n  FAKE: write one.txt one\n"
                    f"- [ ] task two\n  FAKE: bash {_above(tmp_path)} {plan}\n  FAKE: fail 9\n"
                    "- [ ] task three\n  FAKE: fail 9\n- [ ] task four\n  FAKE: fail 9\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1",
                      "--max-failures", "3", *task)
    assert done.returncode != 0, done.stdout + done.stderr
    line = next((line for line in done.stderr.splitlines() if "Continue with: " in line), "")
    flag = "--task=" if task[0].startswith("--task=") else "--task "
    assert line.endswith("Continue with: agent-loop tasks.md --vcs git --no-distill "
                         f"--max-attempts 1 --max-failures 3 {flag}3-5"), \
        done.stdout + done.stderr
    status = agent_loop(work, "--status").stdout
    assert _failed(status) == [3, 4, 5], status


BELOW = """
import sys
plan = sys.argv[1]
open(plan, "a").write("- [ ] task put below\\n  FAKE: write below.txt below\\n")
"""


def test_the_closing_count_has_the_tasks_added_while_the_run_worked(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task one's agent adds a task at the end of the plan: the run leaves it for the next
    # run, and its closing count says so, as --status does right after (2 completed, 1
    # pending), not "2 completed" of a plan of three.
    init_repo(work, "git")
    (tmp_path / "below.py").write_text(BELOW)
    below = shlex.join([sys.executable, str(tmp_path / "below.py")])
    plan = work / "tasks.md"
    plan.write_text(f"# Plan\n\n- [ ] task one\n  FAKE: write one.txt one\n"
                    f"  FAKE: bash {below} {plan}\n- [ ] task two\n  FAKE: write two.txt two\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    closing = next(line for line in done.stdout.splitlines() if line.startswith("agent-loop "))
    assert "2 completed, 1 pending;" in closing, done.stdout
    status = agent_loop(work, "--status").stdout
    assert [line.split()[:2] for line in status.splitlines() if line.split()[1:2] in (
        ["completed"], ["pending"])] == [["1", "completed"], ["2", "completed"],
                                         ["3", "pending"]], status
