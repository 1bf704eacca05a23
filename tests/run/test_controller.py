"""One controller for every --parallel K: the same rules for a run of one lane and of several
(--stop-after-running, `Depends on:`, a plan edited while the run works), with the fake claude
and real git."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, state_of
from tests.support.runner import agent_loop


def test_stop_after_running_stops_a_sequential_run_after_its_task(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    # The first task's agent asks, from another process, as a user in a second terminal would.
    ask = f"cd {work} && {sys.executable} -m agentloop tasks.md --stop-after-running"
    (work / "tasks.md").write_text(
        "## Only\n"
        f"- first\n  FAKE: write a.txt a\n  FAKE: bash {ask}\n"
        "- second\n  FAKE: write b.txt b\n"
        "- third\n  FAKE: write c.txt c\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 4, done.stdout + done.stderr   # stopped with tasks left
    assert "no new task starts" in done.stdout
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "pending", "pending"]
    assert len(fake_claude.task_prompts()) == 1
    assert len(git_commits(work)) == 1


DEPENDS_ON_A_FAILURE = """\
## Base
- make the base
  FAKE: fail 9

## Top
Depends on: Base
- build on the base
  FAKE: write top.txt top

## Aside
- something else
  FAKE: write aside.txt aside
"""


def test_a_sequential_run_does_not_start_a_group_whose_dependency_failed(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(DEPENDS_ON_A_FAILURE)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Top did not start: it waits for Base, which did not finish" in done.stdout
    assert not any("build on the base" in p for p in fake_claude.task_prompts())
    assert [t["status"] for t in state_of(work)["tasks"]] == ["failed", "pending", "completed"]


def test_group_with_an_unmet_dependency_refuses_unless_told_to_ignore_it(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(DEPENDS_ON_A_FAILURE)
    refused = agent_loop(work, "--vcs", "git", "--no-distill", "--group", "Top")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "agent-loop: error: group 'Top' waits for 'Base', which is not done yet (Depends on:); run "
        "that first, or add --ignore-deps to start it anyway"]
    assert fake_claude.task_prompts() == []
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--group", "2", "--ignore-deps")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["pending", "completed", "pending"]


def edited_plan(work: Path, tmp_path: Path) -> str:
    """A plan whose first task's agent edits the plan as a user would while the run works: it
    rewords a task, removes one and ticks one, all in groups that start only after it."""
    script = tmp_path / "edit_plan.py"
    script.write_text(
        "import pathlib, sys\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "t = p.read_text()\n"
        "t = t.replace('- [ ] old wording\\n', '- [ ] new wording\\n')\n"
        "t = t.replace('- [ ] remove me\\n  FAKE: write gone.txt gone\\n', '')\n"
        "t = t.replace('- [ ] tick me', '- [x] tick me')\n"
        "p.write_text(t)\n")
    return (
        "## Editor\n"
        f"- [ ] edit the plan\n  FAKE: bash {sys.executable} {script} {work / 'tasks.md'}\n"
        "  FAKE: write editor.txt e\n\n"
        "## Beside\n- [ ] beside\n  FAKE: write beside.txt b\n\n"
        "## Words\nDepends on: Editor\n- [ ] old wording\n  FAKE: write words.txt w\n\n"
        "## Later\nDepends on: Editor\n"
        "- [ ] remove me\n  FAKE: write gone.txt gone\n"
        "- [ ] tick me\n  FAKE: write ticked.txt t\n"
        "- [ ] keep me\n  FAKE: write kept.txt k\n")


@pytest.mark.parametrize("lanes", ["1", "2"])
def test_a_task_removed_ticked_or_reworded_while_the_run_works(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, lanes: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(edited_plan(work, tmp_path))
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", lanes)
    assert done.returncode == 0, done.stdout + done.stderr
    prompts = fake_claude.task_prompts()
    assert not any("remove me" in p or "tick me" in p or "old wording" in p for p in prompts)
    assert sum("new wording" in p for p in prompts) == 1
    assert not (work / "gone.txt").exists() and not (work / "ticked.txt").exists()
    assert (work / "kept.txt").exists() and (work / "words.txt").exists()
    # The Editor's agent edits the plan: time cannot tell its write from yours.
    during = "while an agent ran (by it, or you)"
    assert f"task \"remove me\" was removed from the plan {during}: not started" in done.stdout
    # Named as the plan read then, and reads now: "remove me" gone, "tick me" is task 4.
    assert f"\n  task 4 (tick me) was ticked in the plan {during}: skipped" in done.stdout
    assert f"\nlook at: task 4 (tick me) was ticked in the plan {during}: skipped" in done.stdout
    assert f"task 3 was reworded {during}: it runs as it reads now (new wording)" in done.stdout
    # The next run reads the plan as it is now: nothing left, nothing new.
    status = agent_loop(work, "--status")
    assert status.returncode == 0
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_prompts()) == len(prompts)


def test_a_task_deleted_and_another_appended_in_its_place_is_not_said_reworded(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """While task one runs, pending task two is deleted and task three appended where it
    stood. The pairing makes three run in two's place (now, in this run), and the run said
    "task 2 was reworded ... (three appended)": words of an edit nobody made."""
    script = tmp_path / "edit_plan.py"
    script.write_text(
        "import pathlib, sys\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "t = p.read_text().replace('- [ ] two to delete\\n  FAKE: write two.txt 2\\n', '')\n"
        "p.write_text(t + '- [ ] three appended\\n  FAKE: write three.txt 3\\n')\n")
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        "## A\n"
        f"- [ ] one\n  FAKE: bash {sys.executable} {script} {work / 'tasks.md'}\n"
        "  FAKE: write one.txt 1\n"
        "- [ ] two to delete\n  FAKE: write two.txt 2\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "three.txt").exists() and not (work / "two.txt").exists()
    assert "reworded" not in done.stdout, done.stdout
    assert "task 2 (two to delete) was removed and another task put in its place while an " \
        "agent ran (by it, or you): it runs as it reads now (three appended)" in done.stdout, \
        done.stdout


def test_a_one_line_task_said_at_length_while_the_run_works_is_said_reworded(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """While task one runs, pending "Add login page" is reworded "Add a login page with OAuth
    and remember-me", the line under it changed too (likeness 0.5: most of its words are
    new). The run said "task 2 (Add
    login page) was removed and another task put in its place": words of an edit nobody
    made."""
    script = tmp_path / "edit_plan.py"
    script.write_text(
        "import pathlib, sys\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('Add login page\\n  FAKE: write login.txt 2', "
        "'Add a login page with OAuth and remember-me\\n  FAKE: write login.txt oauth'))\n")
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        "## A\n"
        f"- [ ] one\n  FAKE: bash {sys.executable} {script} {work / 'tasks.md'}\n"
        "  FAKE: write one.txt 1\n"
        "- [ ] Add login page\n  FAKE: write login.txt 2\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "put in its place" not in done.stdout, done.stdout
    assert "task 2 was reworded while an agent ran (by it, or you): it runs as it reads now " \
        "(Add a login page with OAuth and remember-me)" in done.stdout, done.stdout
    assert (work / "login.txt").read_text().strip() == "oauth"


def test_status_after_kill_9_counts_no_task_as_running(work: Path,
                                                       fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    # The agent kills agent-loop (its parent) with SIGKILL mid-task, then ends by itself.
    (work / "tasks.md").write_text(
        "- [ ] killed midway\n  FAKE: bash kill -9 $(ps -o ppid= -p $PPID)\n"
        "- [ ] next\n  FAKE: write b.txt b\n")
    killed = agent_loop(work, "--vcs", "git", "--no-distill")
    assert killed.returncode == -9
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    assert "running" not in status.stdout and "interrupted" in status.stdout
    shown = json.loads(agent_loop(work, "--status", "--json").stdout)
    assert [t["status"] for t in shown["tasks"]] == ["interrupted", "pending"]


def test_a_held_lane_says_held_until_the_reset_not_running(work: Path,
                                                           fake_claude: FakeClaude) -> None:
    import time

    from agentloop.console.lanes import Lanes
    from agentloop.run.events import event_types
    from tests.run.test_parallel import LIMIT_PLAN

    init_repo(work, "git")
    (work / "tasks.md").write_text(LIMIT_PLAN)
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--backoff", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in
              (work / ".agent-loop" / "events.jsonl").read_text().splitlines()]
    wait = next(i for i, e in enumerate(events) if e["type"] == "LimitWait")
    busy = [e for e in events[wait:] if e.get("lane") == "Busy"
            and e["type"] in ("LaneHeld", "AgentStarted")]
    # The busy lane's next agent run was held, and said so, before it started.
    assert [e["type"] for e in busy[:2]] == ["LaneHeld", "AgentStarted"]
    # The live line of a held lane.
    lanes, until = Lanes(), time.mktime((2026, 1, 1, 14, 5, 0, 0, 0, -1))
    fields = {k: v for k, v in busy[0].items() if k not in ("type", "time", "v")}
    lanes.update(event_types()["TaskStarted"](2, 3, "Busy", "after the limit", 1, lane="Busy"),
                 0.0)
    lanes.update(event_types()["LaneHeld"](**{**fields, "until": until}), 1.0)
    [line] = lanes.lines(4.0)
    assert line.endswith("held: usage limit until 14:05") and "starting" not in line


def test_a_task_reworded_while_it_runs_stays_done_as_one_reworded_after_it_was_done(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    # While the last task runs, a note paragraph is appended under it (its words change), as a
    # user saving the plan then would: the same rule as for that edit made after the run.
    init_repo(work, "git")
    note = tmp_path / "note.py"
    note.write_text("import sys\n"
                    "open(sys.argv[1], 'a').write('\\nNotes: ask Bob about the API.\\n')\n")
    (work / "tasks.md").write_text(
        "## A\n- [ ] t1\n  FAKE: write t1.txt 1\n"
        f"- [ ] t2\n  FAKE: write t2.txt 2\n  FAKE: bash {sys.executable} {note} "
        f"{work / 'tasks.md'}\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    line = ("task 2's words changed after it was done: it stays done (not paid for again); "
            "`agent-loop tasks.md --task 2 --again` runs the new words")
    assert line in done.stdout and "1 edited" not in done.stdout, done.stdout
    assert len(fake_claude.task_prompts()) == 2
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert line in again.stdout and "0 of 2 task(s) to run" in again.stdout, again.stdout
    assert len(fake_claude.task_prompts()) == 2   # not paid for again
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2
    rerun = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "2", "--again")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "Notes: ask Bob" in fake_claude.task_prompts()[-1]


@pytest.mark.parametrize("lanes", ["1", "2"])
def test_a_task_removed_while_its_agent_runs_lands_and_is_said_so(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, lanes: str) -> None:
    # The first task's agent deletes its own line and the next task's from the plan. The next
    # one does not start; the first finishes and lands (its agent was paid). The closing line
    # counted the one not started as "1 pending", and said nothing of the one that landed.
    init_repo(work, "git")
    script = tmp_path / "remove.py"
    script.write_text(
        "import pathlib, sys\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "t = p.read_text()\n"
        "p.write_text(t[:t.index('- [ ] remove myself')] + t[t.index('## Other'):])\n")
    (work / "tasks.md").write_text(
        "## Gone\n"
        f"- [ ] remove myself\n  FAKE: bash {sys.executable} {script} {work / 'tasks.md'}\n"
        "  FAKE: write self.txt s\n"
        "- [ ] removed too\n  FAKE: write too.txt t\n\n"
        "## Other\n- [ ] stays\n  FAKE: write stays.txt s\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", lanes)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "self.txt").exists() and not (work / "too.txt").exists()
    # Counted as the plan reads now (--status's totals): the one that landed is said apart.
    assert "agent-loop done: 1 completed, 1 removed from the plan, \"remove myself\" " \
        "(completed, removed from the plan since);" in done.stdout, done.stdout
    # Its record is gone from the state with its line (the state holds the plan the run read
    # last): its change is the commit that says its words.
    change = git(work, "log", "-1", "--format=%H", "--grep", "remove myself").strip()[:12]
    assert "look at: task \"remove myself\" was removed from the plan while this run worked, " \
        f"after its agent had started: its change landed; `git revert {change}` takes it " \
        "back" in done.stdout, done.stdout
    # Its own agent removed it: the plan changed while an agent ran.
    assert "look at: task \"removed too\" was removed from the plan while an agent ran (by it, " \
        "or you): not started" in done.stdout, done.stdout


def test_every_task_removed_from_the_plan_while_the_run_works_is_said_plainly(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    """The first task's agent deletes every task from the plan, leaving its heading and a line of
    words. The run read that as a plan with nothing left to start, but the closing line said
    "tasks.md changed while this run worked and cannot be read now: task file tasks.md has no
    tasks: write each task as a list item", as if the file were broken."""
    init_repo(work, "git")
    script = tmp_path / "empty.py"
    script.write_text("import pathlib, sys\n"
                      "pathlib.Path(sys.argv[1]).write_text('# Plan\\n\\nNothing left.\\n')\n")
    (work / "tasks.md").write_text(
        f"- [ ] empty the plan\n  FAKE: bash {sys.executable} {script} {work / 'tasks.md'}\n"
        "  FAKE: write a.txt a\n"
        "- [ ] never\n  FAKE: write b.txt b\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    out = done.stdout + done.stderr
    assert "Traceback" not in out and not (work / "b.txt").exists(), out
    assert "cannot be read" not in out and "has no tasks:" not in out, out
    assert "look at: tasks.md has no tasks now: every task was removed from it while this " \
        "run worked" in done.stdout, out
    # The task whose agent emptied it landed all the same: said with what takes it back.
    assert 'look at: task "empty the plan" was removed from the plan while this run ' \
        "worked, after its agent had started: its change landed" in done.stdout, out
