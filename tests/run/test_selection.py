"""Choosing what runs, as a user types it: --task lists and ranges, --group, and a --dry-run
that refuses what the run would refuse; --status over every plan; errors as JSON."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from agentloop.console.stops import resume_command
from tests.support.fake_agent import FakeClaude
from tests.support.runner import invoke

PLAN = "# Shop\n\n## Setup\n- one\n- two\n## Backend API\n- three\n- four\n## Setup\n- five\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "tasks.md").write_text(PLAN)
    monkeypatch.chdir(folder)
    return folder


def test_repeated_task_options_run_every_task_named(work: Path, fake_claude: FakeClaude) -> None:
    code, out, err = invoke("tasks.md", "--vcs", "none", "--task", "2", "--task", "4")
    assert code == 0, out + err
    assert fake_claude.task_prompts() == ["two", "four"]
    assert "2 of 5 task(s) to run" in out


def test_ranges_and_lists_select_tasks_in_plan_order(work: Path, fake_claude: FakeClaude) -> None:
    code, out, err = invoke("tasks.md", "--vcs", "none", "--task", "4-5,1")
    assert code == 0, out + err
    assert fake_claude.task_prompts() == ["one", "four", "five"]
    code, out, _ = invoke("tasks.md", "--dry-run", "--task", "2-3")
    assert "[2/5] Setup > two  (resumes session " in out
    assert "[3/5] Backend API > three  (starts a fresh session)" in out
    assert "[4/5] Backend API > four  (not run: not selected)" in out


def test_dry_run_numbers_the_groups_and_group_runs_one(work: Path,
                                                       fake_claude: FakeClaude) -> None:
    code, out, _ = invoke("tasks.md", "--dry-run")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("group ")] == [
        "group 1: Setup", "group 2: Backend API", "group 3: Setup (2)"]
    code, out, err = invoke("tasks.md", "--vcs", "none", "--group", "2")
    assert code == 0, out + err
    assert fake_claude.task_prompts() == ["three", "four"]
    code, out, err = invoke("tasks.md", "--vcs", "none", "--group", "setup (2)")
    assert code == 0, out + err
    assert fake_claude.task_prompts() == ["three", "four", "five"]
    # Done: the group has nothing left, unless --again.
    code, _, err = invoke("tasks.md", "--vcs", "none", "--group", "backend api")
    assert code == 1 and err.count("\n") == 1
    assert "group 2 (Backend API) has no task left to run; --group 2 --again" in err
    code, out, err = invoke("tasks.md", "--vcs", "none", "--group", "2", "--again")
    assert code == 0, out + err
    assert fake_claude.task_prompts()[-2:] == ["three", "four"]


@pytest.mark.parametrize("args, code, words", [
    (["--task", "9"], 1, "there is no task 9: the task file has 5"),
    (["--task", "4-9"], 1, "there is no task 6: the task file has 5"),
    (["--task", "5-3"], 2, "the range 5-3 is empty; write it low to high (3-5)"),
    (["--task", ","], 2, "not a task number, range or list"),
    (["--group", "7"], 1, "there is no group 7: the plan has 3 (1 Setup, 2 Backend API, "
                          "3 Setup (2))"),
    (["--group", "Frontend"], 1, "no group is named 'Frontend'"),
])
def test_what_cannot_be_selected_is_one_line_in_the_run_and_the_dry_run(
        work: Path, fake_claude: FakeClaude, args: list[str], code: int, words: str) -> None:
    for mode in (["--dry-run"], ["--vcs", "none"]):
        got, out, err = invoke("tasks.md", *mode, *args)
        assert (got, err.count("\n")) == (code, 1), out + err
        assert words in err
    assert fake_claude.task_prompts() == []
    assert not (work / ".agent-loop" / "state.json").exists()


def test_the_resume_line_repeats_the_selection() -> None:
    args = ["tasks.md", "--task", "6", "--task", "3-5,8", "--reset"]
    assert resume_command(args) == "agent-loop tasks.md --task 6 --task 3-5,8"
    assert resume_command(["tasks.md", "--group", "Backend API", "--again"]) == \
        "agent-loop tasks.md --group 'Backend API' --again"


def test_dry_run_refuses_a_vcs_or_agent_switch_as_the_run_does(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    assert invoke("tasks.md", "--vcs", "none", "--task", "1")[0] == 0
    for switch in (["--vcs", "git"], ["--agent", "codex"]):
        real = invoke("tasks.md", *switch)
        dry = invoke("tasks.md", *switch, "--dry-run")
        assert real[0] == dry[0] == 1 and real[2] == dry[2], (real, dry)
        assert "this run began with" in dry[2] and dry[1] == ""
        assert "every task runs again" in dry[2]  # what --reset costs, said before it is paid


def test_dry_run_shows_the_format_rules_only_before_the_first_run(
        work: Path, fake_claude: FakeClaude) -> None:
    assert "rules:" in invoke("tasks.md", "--dry-run")[1]
    assert invoke("tasks.md", "--vcs", "none", "--task", "1")[0] == 0
    assert "rules:" not in invoke("tasks.md", "--dry-run")[1]


def test_status_without_a_file_lists_every_plan(work: Path, fake_claude: FakeClaude) -> None:
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)  # one root for both plans
    code, out, _ = invoke("--status")
    assert code == 0 and out.startswith("no plan has run in . yet")
    (work / "docs").mkdir()
    (work / "docs" / "more.md").write_text("- alpha\n- beta\n  FAKE: exit 1\n"
                                           '  FAKE: advise {"retry": false, "reason": "no"}\n')
    assert invoke("tasks.md", "--vcs", "none", "--task", "1-2")[0] == 0
    assert invoke("docs/more.md", "--vcs", "none")[0] == 4
    code, out, _ = invoke("--status")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2, out
    assert lines[0].startswith("tasks.md: 5 task(s), 2 done, 0 failed, 3 pending; cost $")
    assert lines[0].endswith("; state in .agent-loop/")
    assert lines[1].startswith("docs/more.md: 2 task(s), 1 done, 1 failed, 0 pending; cost $")
    assert "; state in .agent-loop/plans/docs-more-md-" in lines[1]
    code, out, _ = invoke("--status", "--json")
    data = orjson.loads(out)
    assert data["schema"] == 1
    assert [(p["task_file"], p["counts"]) for p in data["plans"]] == [
        ("tasks.md", {"completed": 2, "pending": 3}),
        ("docs/more.md", {"completed": 1, "failed": 1})]
    # From a subfolder, paths are as the user types them there.
    os.chdir(work / "docs")
    code, out, _ = invoke("--status")
    assert out.splitlines()[0].startswith("../tasks.md: 5 task(s)")
    assert out.splitlines()[1].startswith("more.md: 2 task(s)")
    assert "; state in ../.agent-loop/plans/docs-more-md-" in out


def test_every_other_mode_still_needs_the_task_file(work: Path) -> None:
    for args in ([], ["--dry-run"], ["--status", "--follow"]):
        code, _, err = invoke(*args)
        assert code == 2 and "Missing argument 'TASKS_MD'" in err, args


def test_with_json_an_error_is_json_on_stdout_too(work: Path, fake_claude: FakeClaude) -> None:
    code, out, err = invoke("missing.md", "--status", "--json")
    assert code == 1 and "agent-loop: error:" in err
    data = orjson.loads(out)
    assert data["schema"] == 1 and data["exit_code"] == 1 and "missing.md" in data["error"]
    code, out, _ = invoke("tasks.md", "--dry-run", "--json", "--task", "9")
    assert orjson.loads(out) == {"schema": 1, "exit_code": 1,
                                 "error": "there is no task 9: the task file has 5"}
    code, out, _ = invoke("tasks.md", "--json")
    assert code == 2 and orjson.loads(out)["error"] == ("--json goes with --status or --dry-run or "
                                                       "--show-settings or --integrate")
    code, out, _ = invoke("tasks.md", "--dry-run", "--json")
    assert orjson.loads(out)["schema"] == 1


def test_dry_run_warns_of_a_dirty_tree_the_run_refuses(work: Path,
                                                       fake_claude: FakeClaude) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run([*git, "add", "tasks.md"], cwd=work, check=True)
    subprocess.run([*git, "commit", "-qm", "plan"], cwd=work, check=True)
    (work / "notes.txt").write_text("mine\n")
    # In a lane (the default) the run leaves the file alone: nothing to warn of.
    assert "the run would stop" not in invoke("tasks.md", "--dry-run", "--vcs", "git")[1]
    here = ("--vcs", "git", "--workplace", "checkout")
    code, out, _ = invoke("tasks.md", "--dry-run", *here)
    real = invoke("tasks.md", *here)
    assert code == 0 and real[0] == 1
    refusal = real[2].strip().removeprefix("agent-loop: error: ")
    assert f"warning: the run would stop here: {refusal}\n" in out
    assert "notes.txt" in out
    assert "the run would stop" not in invoke("tasks.md", "--dry-run", *here,
                                              "--allow-dirty")[1]
    assert not (work / ".agent-loop" / "state.json").exists()


def test_status_without_a_file_says_a_running_task_is_running(
        work: Path, fake_claude: FakeClaude) -> None:
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    assert invoke("tasks.md", "--vcs", "none", "--task", "1")[0] == 0
    # A run lives (this process stands for it) and its task 2 runs now.
    state_file = work / ".agent-loop" / "state.json"
    state = orjson.loads(state_file.read_bytes())
    state["tasks"][1]["status"] = "running"
    state_file.write_bytes(orjson.dumps(state))
    (work / ".agent-loop" / "run.pid").write_text(f"{os.getpid()}\n")
    line = invoke("--status")[1].splitlines()[0]
    assert line.startswith("tasks.md: 5 task(s), 1 done, 0 failed, 3 pending, 1 running;"), line


def test_a_task_left_landing_is_taken_in_before_a_later_selected_one() -> None:
    """--task 2 with task 1 left landing: task 1 lands first (no agent), and --dry-run says so;
    an optional task left landing is taken by a plain run too."""
    from agentloop.options.record import RunOptions
    from agentloop.run.selection import plan_rows, select
    from tests.state.test_store import make_state

    state = make_state(3)
    state.tasks[0].status = "landing"
    state.tasks[0].optional = True
    chosen = select(state, RunOptions(task=("2",)))
    assert chosen == (1, 2)
    rows = plan_rows(state, 5, only=chosen)
    assert rows[0].runs and "lands" in rows[0].how and not rows[2].runs
    assert plan_rows(state, 5)[0].runs


def test_each_tasks_session_is_read_in_one_pass_as_a_look_back_reads_it() -> None:
    """--dry-run of a 5 MB plan (39,458 tasks under one heading) took 7.5 minutes: each
    pending task looked back through every earlier one for the session it would continue. The
    one pass that replaced the look-back gives each task the session the look-back gives, over
    every status in three groups (the speed is a benchmark's to say, not a test's)."""
    import itertools

    from agentloop.run.selection import _continued
    from agentloop.state.status import TaskStatus
    from tests.state.test_store import make_state

    def looked_back(tasks: list, task) -> str | None:  # type: ignore[no-untyped-def]
        for earlier in reversed(tasks[: task.index - 1]):
            if earlier.group != task.group or earlier.status == "failed":
                return None
            if earlier.status in ("completed", "blocked", "unapproved", "landing"):
                return earlier.session_id
        return None

    statuses = list(TaskStatus)
    state = make_state(len(statuses) * 6)
    for n, (task, status) in enumerate(zip(state.tasks, itertools.cycle(statuses))):
        task.status, task.session_id = status, f"s-{n}"
        task.group = "GHI"[n // (len(statuses) * 2)]
    assert list(_continued(state.tasks)) == [looked_back(state.tasks, t) for t in state.tasks]
    assert any(_continued(state.tasks)) and None in list(_continued(state.tasks))


def test_a_tasks_session_is_found_looking_back_only_to_the_task_it_continues() -> None:
    """The session a task continues, asked before every task a run starts, is found by looking
    back from it, never through the plan before it: a pass over every earlier task made each
    task of a long plan cost more than the one before (a 200-task plan: 100 records read a task
    on average). It is the session the one pass of --dry-run gives, over every status."""
    import itertools

    from agentloop.run.selection import _continued, resume_session
    from agentloop.state.status import TaskStatus
    from tests.state.test_store import make_state

    statuses = list(TaskStatus)
    state = make_state(len(statuses) * 6)
    for n, (task, status) in enumerate(zip(state.tasks, itertools.cycle(statuses))):
        task.status, task.session_id = status, f"s-{n}"
        task.group = "GHI"[n // (len(statuses) * 2)]
    assert [resume_session(state, t) for t in state.tasks] == list(_continued(state.tasks))

    class Unread:
        """A record that must not be read."""

        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"a record before the task continued was read ({name})")

    state = make_state(6)
    for task in state.tasks:
        task.group = "Later"
    state.tasks[3].status, state.tasks[3].session_id = "completed", "s-4"
    state.tasks[4].status = "skipped"
    state.tasks[:3] = [Unread(), Unread(), Unread()]  # type: ignore[list-item]
    assert resume_session(state, state.tasks[5]) == "s-4"
