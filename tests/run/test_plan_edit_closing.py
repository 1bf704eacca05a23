"""A plan edited while the run works, the rest of what is read after the run's end: every
closing `look at:` line, the closing count and the hooks name the tasks as the plan reads now
(`--status`'s numbers, right after the run); a task the plan no longer has, by its words, and
not counted as a task of the plan (tests/run/test_plan_edit_numbers.py has the first lines)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo
from tests.support.runner import agent_loop

# An agent's edit of the plan: `remove WORD` takes task WORD's line and its indented lines
# out, `tick WORD` ticks its box, `reword WORD` adds ", reworded" to its words.
EDIT = """
import sys
plan, *acts = sys.argv[1:]
lines, out = open(plan).read().splitlines(), []
drop = False
for line in lines:
    if line.startswith("- "):
        drop = False
        words = line.split("task ", 1)[-1]
        for act, word in zip(acts[::2], acts[1::2]):
            if words == word and act == "remove":
                drop = True
            elif words == word and act == "tick":
                line = line.replace("[ ]", "[x]")
            elif words == word and act == "reword":
                line += ", reworded"
    if not drop:
        out.append(line)
open(plan, "w").write("\\n".join(out) + "\\n")
"""

# A hook that appends what it was given (stdin, its task variable) to a JSONL file.
RECORD = """
import json, os, sys
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({"stdin": json.loads(sys.stdin.read()),
                          "task": os.environ.get("AGENT_LOOP_EVENT_TASK"),
                          "failed": os.environ.get("AGENT_LOOP_EVENT_FAILED")}) + "\\n")
"""


def _tools(tmp_path: Path) -> tuple[str, str, Path]:
    (tmp_path / "edit.py").write_text(EDIT)
    (tmp_path / "record.py").write_text(RECORD)
    out = tmp_path / "hooks.jsonl"
    return (shlex.join([sys.executable, str(tmp_path / "edit.py")]),
            shlex.join([sys.executable, str(tmp_path / "record.py"), str(out)]), out)


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def _nine(work: Path, edit: str) -> None:
    """Task one's agent removes task two (not started); task four's removes task three (it
    ran and failed), ticks task seven and rewords task eight. Task five fails, task six
    changes no file, task nine is left unapproved. The plan then reads one, four, five, six,
    seven, eight (reworded), nine: task six is task 4 there, seven 5, eight 6, nine 7."""
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text(
        f"- [ ] task one\n  FAKE: write one.txt one\n  FAKE: bash {edit} {plan} remove two\n"
        "- [ ] task two\n  FAKE: write two.txt two\n"
        "- [ ] task three\n  FAKE: fail 9\n"
        f"- [ ] task four\n  FAKE: write four.txt four\n"
        f"  FAKE: bash {edit} {plan} remove three tick seven reword eight\n"
        "- [ ] task five\n  FAKE: fail 9\n"
        "- [ ] task six\n  FAKE: say nothing to change\n"
        "- [ ] task seven\n  FAKE: write seven.txt seven\n"
        "- [ ] task eight\n  FAKE: write eight.txt eight\n"
        "- [ ] task nine\n  FAKE: write nine.txt nine\n  FAKE: review FEEDBACK: not yet\n")


@pytest.mark.parametrize("parallel", [(), ("--parallel", "2")])
def test_the_closing_lines_count_and_hooks_name_tasks_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path, parallel: tuple[str, ...]) -> None:
    edit, hook, out = _tools(tmp_path)
    _nine(work, edit)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1",
                      "--max-failures", "5", "--review", "--max-review-rounds", "1",
                      "--on-task", hook, "--on-finish", hook, *parallel)
    text = done.stdout
    assert done.returncode == 4, text + done.stderr
    status = agent_loop(work, "--status").stdout
    for number, state, words in ((1, "completed", "task one"), (2, "completed", "task four"),
                                 (3, "failed", "task five"), (4, "completed", "task six"),
                                 (5, "skipped", "task seven"),
                                 (6, "completed", "task eight, reworded"),
                                 (7, "unapproved", "task nine")):
        assert any(line.split()[:2] == [str(number), state] and line.endswith(f"> {words}")
                   for line in status.splitlines()), (number, status)
    during = "while an agent ran (by it, or you)"
    lines = text.splitlines()
    looks = [line for line in lines if line.startswith("look at: ")]
    # Each look-at line names its task by --status's number, not the run's (7, 8, 9, 6).
    assert f"look at: task 5 (task seven) was ticked in the plan {during}: skipped" in looks, \
        text
    assert (f"look at: task 6 was reworded {during}: it runs as it reads now "
            "(task eight, reworded)") in looks, text
    assert any(line.startswith("look at: task 7 is unapproved (") for line in looks), text
    assert any(line.startswith("look at: task 4 completed but changed no files; read ")
               for line in looks), text
    assert not any(line.startswith(("look at: task 8", "look at: task 9")) for line in looks), \
        text
    # The count is the plan's as it reads now: task three, failed and removed since, is no
    # failure of it, said apart by its words.
    closing = next(line for line in lines if line.startswith("agent-loop done: "))
    assert closing.startswith(
        "agent-loop done: 4 completed, 1 failed, 1 skipped, 1 unapproved, 1 removed from the "
        "plan, \"task three\" (failed, removed from the plan since); cost "), closing
    assert "not completed: task(s) 3, 7 and \"task three\" (removed from the plan since);" \
        in text, text
    hooks = _records(out)
    finish = hooks[-1]
    assert finish["stdin"]["hook"] == "on-finish", hooks
    assert finish["stdin"]["counts"] == {"completed": 4, "failed": 1, "skipped": 1,
                                         "unapproved": 1}, finish
    assert finish["failed"] == "1", finish
    # on-task: each task by its number in the plan as the run last read it when the task
    # ended: task four's own edit is read after it (3 then), the others' numbers are the
    # plan's now.
    tasks = [(r["stdin"]["task"]["index"], r["task"], r["stdin"]["task"]["summary"])
             for r in hooks[:-1]]
    assert tasks == [(1, "1", "task one"), (3, "3", "task four"), (4, "4", "task six"),
                     (6, "6", "task eight, reworded"), (7, "7", "task nine")], tasks
    if parallel:
        return
    # Live, a failed task by its number as the run read the plan then (task three was 2,
    # task five 3), as its `[2/8] task 2` line above.
    assert "\n  task 2 failed: simulated failure" in text, text
    assert "\n  task 3 failed: simulated failure" in text, text
    assert "task 5 failed" not in text, text


def _stubborn(work: Path, edit: str, marker: Path) -> None:
    """Task zero, then a task that fails each run; once `marker` is there, its agent removes
    task zero from the plan."""
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text(
        "- [ ] task zero\n  FAKE: write zero.txt zero\n"
        "- [ ] task stubborn\n  FAKE: fail 99\n"
        f"  FAKE: bash test ! -e {marker} || {edit} {plan} remove zero\n")


@pytest.mark.parametrize("parallel", [(), ("--parallel", "2")])
def test_a_stalled_task_is_named_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path, parallel: tuple[str, ...]) -> None:
    edit, _, _ = _tools(tmp_path)
    marker = tmp_path / "now"
    _stubborn(work, edit, marker)
    for attempts in ("1", "2"):
        done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", attempts,
                          *parallel)
        assert done.returncode == 4, done.stdout + done.stderr
    # The third run: task stubborn (task 2) removes task zero, so it is task 1 when the run
    # ends, and task later (3) is task 2.
    marker.touch()
    with (work / "tasks.md").open("a") as plan:
        plan.write("- [ ] task later\n  FAKE: write later.txt later\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "3", *parallel)
    text = done.stdout
    assert done.returncode == 4, text + done.stderr
    assert "look at: task 1 has started in 3 runs in a row without completing (failed: " \
        in text, text
    assert "look at: task 2 has started" not in text, text
    assert "not completed: task(s) 1;" in text, text
    status = agent_loop(work, "--status").stdout
    assert any(line.split()[:2] == ["1", "failed"] and line.endswith("> task stubborn")
               for line in status.splitlines()), status


def test_a_line_said_with_the_run_s_number_names_the_task_as_the_plan_reads_now() -> None:
    # A task's recorded error or note says the run's number (`task 5`, `--task 5`): the closing
    # lines (conflicted, held, a completed task's note) say the plan's now; a task the plan no
    # longer has, by its words, its `--task` left as it was (no number names it now).
    from agentloop.run.names_now import Names

    names = Names({5: 3, 7: 7}, {5: "five", 6: "six", 7: "seven"})
    said = ("task 5: an agent ran git in your checkout; `agent-loop tasks.md --task 5 "
            "--again` does it again (task 50 and subtask 5 are others)")
    assert names.within(said, 5) == (
        "task 3: an agent ran git in your checkout; `agent-loop tasks.md --task 3 "
        "--again` does it again (task 50 and subtask 5 are others)")
    assert names.within("conflicts in a.txt; task 6: its note; `--task 6`", 6) == \
        'conflicts in a.txt; task "six": its note; `--task 6`'
    # Task 7's own line, its number the same: a `--task` in it names task 5 by its number now;
    # a bare `task 5` is not its own, and is left (words of an agent or a check, maybe).
    assert names.within(said, 7) == said.replace("--task 5", "--task 3")
    assert names.headed("task 4 (seven) was ticked in the plan: skipped", 7) == \
        "task 7 (seven) was ticked in the plan: skipped"
    assert (names(5), names(6), names.kept(6), Names()(6), Names().within(said, 5)) == \
        ("task 3", 'task "six"', False, "task 6", said)


def test_a_task_option_that_names_other_tasks_too_names_the_same_tasks_now() -> None:
    # A held task's line holds the command that goes on (`agent-loop tasks.md --task 5-7`,
    # the run's own arguments): every task it names, by its number now, so that it runs the
    # same tasks (task 6 is gone from the plan, so left out; task 7 is task 8 now). Left as
    # it was, `--task 5-7` ran the task put where 5 stood and never task 7.
    from agentloop.run.names_now import Names

    names = Names({4: 5, 5: 3, 7: 8, 8: 9, 9: 10}, {4: "four", 5: "five", 7: "seven"})
    for command, now in (("--task 5-7", "--task 3,8"), ("--task 5,7", "--task 3,8"),
                         ("--task 5 --task 7", "--task 3 --task 8"),
                         ("--task=4 --task 5", "--task=5 --task 3"),
                         ("--task 7-9", "--task 8-10"), ("--task 6", "--task 6"),
                         ("--task 5-", "--task 5-")):
        said = f"held: `agent-loop tasks.md {command}`"
        assert names.within(said, 5) == f"held: `agent-loop tasks.md {now}`", command
        assert names.within(said, 4) == f"held: `agent-loop tasks.md {now}`", command
    assert names.within("task 5 is held: `agent-loop tasks.md --task 5`", 5) == \
        "task 3 is held: `agent-loop tasks.md --task 3`"
    # A task whose own number is the same now: the others its `--task` names still move.
    assert Names({1: 1, 2: 4}, {}).within("task 1: `agent-loop tasks.md --task 1-2`", 1) == \
        "task 1: `agent-loop tasks.md --task 1,4`"


@pytest.mark.parametrize(("given", "now"), [
    (["--task", "5, 7"], "--task 3,8"), (["--task", " 5 ,7 "], "--task 3,8"),
    (["--task", "5,\t7"], "--task 3,8"), (["--task", "5 - 7"], "--task 3-4,8"),
    (["--task=5, 7"], "--task=3,8"), (["--task=05-7"], "--task=3-4,8"),
    (["--task", "5", "--task", "6, 7"], "--task 3 --task 4,8"),
    (["--task", "9, 10"], "--task '9, 10'")])
def test_every_spelling_of_a_task_option_names_the_same_tasks_now(
        given: list[str], now: str) -> None:
    # The stop's command is the run's arguments as a shell takes them back (shlex.join):
    # `--task '5, 7'` (a space after the comma, which the CLI accepts) came out quoted, and
    # was left as it was, naming the task put where 5 stood and never task 7. A value that
    # names no task the plan still has stays as it was, quotes and all.
    import shlex

    from agentloop.run.names_now import Names

    names = Names({5: 3, 6: 4, 7: 8}, {})
    command = shlex.join(["agent-loop", "tasks.md", *given])
    assert names.command(command) == f"agent-loop tasks.md {now}", command
    assert names.within(f"held: `{command}`", 5) == f"held: `agent-loop tasks.md {now}`"


def test_a_plan_emptied_mid_run_is_counted_as_it_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # Task one's agent removes both tasks (the plan keeps its title): the plan holds no task
    # now, so the count counts none of it; what the run did is said by its words, and the undo
    # line names task one so too (its number names nothing in the plan now).
    edit, _, _ = _tools(tmp_path)
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text("# Plan\n\n- [ ] task one\n  FAKE: write one.txt one\n"
                    f"  FAKE: bash {edit} {plan} remove one remove two\n"
                    "- [ ] task two\n  FAKE: write two.txt two\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    text = done.stdout
    assert done.returncode == 0, text + done.stderr
    closing = next(line for line in text.splitlines() if line.startswith("agent-loop done: "))
    assert closing.startswith('agent-loop done: 1 removed from the plan, "task one" '
                              "(completed, removed from the plan since); cost "), closing
    assert 'To undo one task, e.g. "task one": git revert ' in text, text
    assert "tasks.md has no tasks now: every task was removed from it" in text, text
    # --status right after holds no task either: the plan has none.
    status = agent_loop(work, "--status")
    assert "has no tasks" in status.stdout + status.stderr, status


def test_a_task_reworded_while_its_own_agent_ran_is_counted_once(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    # You reword the task that runs now (a heading made clearer): it stays done, as the plan
    # reads now, and --status says so. The closing count said it twice, once of the plan's
    # completed tasks and once by its old words as "removed from the plan since", and its undo
    # line named the old words: a plan of two tasks read as three.
    edit, _, _ = _tools(tmp_path)
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text(f"- [ ] task one\n  FAKE: write one.txt one\n"
                    f"  FAKE: bash {edit} {plan} reword one\n"
                    "- [ ] task two\n  FAKE: write two.txt two\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    text = done.stdout
    assert done.returncode == 0, text + done.stderr
    closing = next(line for line in text.splitlines() if line.startswith("agent-loop done: "))
    assert closing.startswith("agent-loop done: 2 completed; cost "), closing
    assert "look at: task 1's words changed after it was done: it stays done" in text, text
    assert "To undo one task, e.g. task 2: git revert " in text, text
    status = agent_loop(work, "--status").stdout
    assert status.startswith("tasks.md: 2 task(s): 2 completed;"), status
