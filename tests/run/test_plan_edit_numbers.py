"""A plan edited while the run works: the live lines name each task by its number in the plan
as it read when the line was printed; everything read after the run's end (the closing lines,
`--status`, the on-finish hook's JSON) by its number in the plan as it reads now, and a task
no longer in it by its words."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo
from tests.support.runner import agent_loop

RECORD = ("python3 -c \"import json,sys; open(sys.argv[1],'w').write(sys.stdin.read())\" "
          "{out}")


def _removes(plan: Path, what: str, line: str) -> str:
    old = f"- [ ] task {what}\\n{line}\\n"
    return (f"python3 -c \"import sys; p=sys.argv[1]; t=open(p).read(); "
            f"open(p,'w').write(t.replace('{old}',''))\" {plan}")


def _six(work: Path) -> None:
    """Six tasks: task one's agent removes task two (not started); task four's removes task
    three (it ran and failed); task five fails too. The plan then reads one, four, five, six."""
    init_repo(work, "git")
    plan = work / "tasks.md"
    plan.write_text(
        f"- [ ] task one\n  FAKE: write one.txt one\n"
        f"  FAKE: bash {_removes(plan, 'two', '  FAKE: write two.txt two')}\n"
        "- [ ] task two\n  FAKE: write two.txt two\n"
        "- [ ] task three\n  FAKE: fail 9\n"
        f"- [ ] task four\n  FAKE: write four.txt four\n"
        f"  FAKE: bash {_removes(plan, 'three', '  FAKE: fail 9')}\n"
        "- [ ] task five\n  FAKE: fail 9\n"
        "- [ ] task six\n  FAKE: write six.txt six\n")


@pytest.mark.parametrize("parallel", [(), ("--parallel", "2")])
def test_after_the_run_tasks_are_named_as_the_plan_reads_now(
        work: Path, fake_claude: FakeClaude, tmp_path: Path, parallel: tuple[str, ...]) -> None:
    _six(work)
    hook = tmp_path / "finish.json"
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1",
                      "--max-failures", "5", "--on-finish", RECORD.format(out=hook),
                      *parallel)
    out = done.stdout
    assert done.returncode == 4, out + done.stderr
    # Task five is task 3 of the plan as it reads now (one, four, five, six), and --status
    # says so; task three, failed and removed since, is named by its words.
    assert "not completed: task(s) 3 and \"task three\" (removed from the plan since);" \
        in out, out
    status = agent_loop(work, "--status").stdout
    assert any(line.split()[:2] == ["3", "failed"] and line.endswith("> task five")
               for line in status.splitlines()), status
    # The undo line's example is task six, task 4 now.
    assert "To undo one task, e.g. task 4: git revert " in out, out
    finish = json.loads(hook.read_text())
    assert finish["unfinished"] == [3], finish
    assert finish["unfinished_removed"] == ["task three"], finish
    # events.jsonl keeps the run's own numbers in its fields, and adds the plan's now.
    events = [orjson.loads(line) for line in
              (work / ".agent-loop" / "events.jsonl").read_bytes().splitlines()]
    end = [e for e in events if e["type"] == "RunFinished"][-1]
    assert end["unfinished"] == [3, 5] and end["unfinished_now"] == [3], end
    assert end["unfinished_removed"] == ["task three"], end
    if parallel:
        return
    # Live: each task by its number in the plan as read when its line was printed.
    assert "\n[1/6] task 1: (ungrouped) > task one\n" in out, out
    assert "\n[2/5] task 2: (ungrouped) > task three\n" in out, out
    assert "\n[3/5] task 3: (ungrouped) > task four\n" in out, out
    assert "\n[4/5] task 3: (ungrouped) > task five\n" in out, out
    assert "\n[5/5] task 4: (ungrouped) > task six\n" in out, out
    started = [(e["index"], e["number"]) for e in events if e["type"] == "TaskStarted"]
    assert started == [(1, 1), (3, 2), (4, 3), (5, 3), (6, 4)], started


def test_the_lane_line_counts_as_the_serial_counter_does() -> None:
    from agentloop.console.lanes import Lanes
    from agentloop.run.events import AgentStarted, TaskStarted

    lanes = Lanes()
    lanes.update(TaskStarted(5, 6, "Backend", "task five", 1, position=4, count=5, number=3,
                             lane="Backend"), 0.0)
    lanes.update(AgentStarted("log", None, lane="Backend"), 0.0)
    assert lanes.lines(1.0) == ["  … Backend [4/5]: 1s · starting"], lanes.lines(1.0)
