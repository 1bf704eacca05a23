"""Real plan formats, read as their authors mean them (fixtures in tests/support/fixtures/plans/,
written for these tests in each style)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.plan import parse as taskfile
from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo
from tests.support.runner import agent_loop

PLANS = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "plans"
NOTE = "a plain bullet in a checklist: a note, not a task"


def read(name: str) -> taskfile.TaskFile:
    return taskfile.load(PLANS / name)


def rows(plan: taskfile.TaskFile) -> list[tuple[str, str, bool]]:
    """(group, first line, runs) of each task."""
    return [(t.group, t.text.splitlines()[0], not (t.checked or t.optional)) for t in plan.tasks]


def test_ralph_fix_plan_runs_open_boxes_and_keeps_notes_out() -> None:
    plan = read("ralph_fix_plan.md")
    assert rows(plan) == [
        ("Urgent", "Make `sync` resume after a dropped connection", True),
        ("Urgent", "Stop the log file from growing without bound", True),
        ("Later", "A `--quiet` flag", True), ("Done", "Basic project layout", False)]
    assert plan.ignored == ((10, "Keep each change small enough to review", NOTE),
                            (11, "Update this file when a task is finished", NOTE))


def test_ralphex_task_sections_are_one_task_each_with_all_their_steps() -> None:
    plan = read("ralphex_plan.md")
    assert [t.text for t in plan.tasks] == [
        "### Task 1: command skeleton\n- [ ] add `src/commands/report.py` with its argument "
        "parsing\n- [ ] tests for the arguments\n- [ ] run the tests; they must pass before "
        "Task 2",
        "### Task 2: the summary itself\n- [ ] group the entries by month\n- [ ] tests for an "
        "empty month and a busy one"]
    assert {t.group for t in plan.tasks} == {"Implementation Steps"}
    assert [text for _, text, _ in plan.ignored] == [
        "`src/commands/` holds one file per command", "unit tests sit beside the code",
        "run it on a real account (costs credits)"]
    assert plan.context.startswith("# Add a report command\n## Overview\nAdds `report`")
    assert "## Context" in plan.context and "Implementation Steps" not in plan.context


def test_superpowers_steps_keep_their_left_margin_bodies() -> None:
    plan = read("superpowers_plan.md")
    assert len(plan.tasks) == 2
    one, two = (t.text for t in plan.tasks)
    assert one.startswith("### Task 1: Generator and its test\n**Files:**\n- Create:")
    assert "Create `tests/test_gen.py` that expects" in one
    assert one.endswith("Run: `pytest tests/test_gen.py`\nExpected: FAIL")
    assert two.endswith("```bash\ncomplete -F _app app\n```")
    # No `##` above: the plan's title is the group.
    assert {t.group for t in plan.tasks} == {"Shell completion plan"}
    assert "**Goal:** tab completion" in plan.context


def test_speckit_items_phases_and_tags() -> None:
    plan = read("speckit_tasks.md")
    assert rows(plan) == [
        ("Phase 1: Setup", "T001 Create the folders for the API and the web app", True),
        ("Phase 1: Setup", "T002 [P] Configure the formatter", True),
        ("Phase 2: User Story 1 (P1)", "T010 [P] [US1] Recipe model in api/models/recipe.py",
         True),
        ("Phase 2: User Story 1 (P1)", "T011 [US1] Recipe list page in web/pages/recipes.tsx",
         True)]
    assert plan.ignored == ((6, "**Checkpoint**: both apps start",
                             "a labelled note after a checklist"),
                            (13, "Phase 2 depends on Phase 1", NOTE))


def test_kiro_markers_nesting_and_optional() -> None:
    plan = read("kiro_tasks.md")
    assert [(t.text.splitlines()[0], t.checked, t.optional) for t in plan.tasks] == [
        ("1. Set up storage", False, False), ("2. Build the HTTP handlers (in progress)", False,
                                              False),
        ("3. Write property-based tests (optional)", False, True),
        ("4. Prototype done", True, False)]
    assert "- [ ] 1.2 Write the notes repository" in plan.tasks[0].text  # sub-tasks fold in



def test_kiro_an_open_sub_task_under_a_ticked_task_is_work_and_optional_ones_stand_apart(
) -> None:
    # Kiro's tasks.md: numbered tasks with sub-tasks folded in, `*` optional. A sub-task still
    # open under a ticked task is work to do (the task runs, said in one warning); an optional
    # sub-task is a task of its own, optional, so its parent's agent never sees it unasked.
    plan = read("kiro_open_under_done.md")
    assert [(t.line, t.text.splitlines()[0], t.checked, t.optional) for t in plan.tasks] == [
        (3, "1. Set up the export command", False, False),
        (6, "1.2 Write property tests for the flag parser", False, True),
        (9, "2. Add the settings page", False, False),
        (13, "3. Spike the file format", True, False),
        (15, "3.2 Benchmark them", True, True)]
    one, optional, two = plan.tasks[0].text, plan.tasks[1].text, plan.tasks[2].text
    assert "property tests" not in one and "- [ ] 1.3 Stream the records as JSON lines" in one
    assert optional == "1.2 Write property tests for the flag parser\n- _Requirements: 1.1_"
    assert "- [ ] 2.2 Save the form on submit" in two
    assert plan.warnings == ("line 9: ticked, but its sub-task on line 11 is open: read as to "
                             "do (tick the sub-task, or it runs with its task)",)


def test_a_task_ticked_by_hand_with_open_sub_items_stays_done_outside_kiros_outline(
        tmp_path: Path) -> None:
    # Sub-items left open under a task ticked by hand are notes or later work, not Kiro's
    # numbered sub-tasks: reading the task as to do would pay an agent for it (the review of
    # the Kiro change found it for every plan).
    plan = tmp_path / "plan.md"
    plan.write_text("- [x] Add login page\n  - [ ] remember-me later\n- [ ] Add logout\n")
    read_back = taskfile.load(plan)
    assert [(t.text.splitlines()[0], t.checked) for t in read_back.tasks] == [
        ("Add login page", True), ("Add logout", False)]
    assert read_back.warnings == ()


def test_kiro_numbered_at_the_left_margin_reads_the_same() -> None:
    plan = read("kiro_flat_open_under_done.md")
    assert [(t.line, t.text.splitlines()[0], t.checked, t.optional) for t in plan.tasks] == [
        (3, "1. Set up the export command", False, False),
        (6, "1.3 Write property tests for the streaming", False, True),
        (9, "2. Add the settings page", False, False)]
    assert "1.3" not in plan.tasks[0].text and "- [ ] 1.4 Document the command" in \
        plan.tasks[0].text
    assert plan.warnings == ("line 3: ticked, but its sub-task on line 5 is open: read as to "
                             "do (tick the sub-task, or it runs with its task)",)
    # An optional one nested in a sub-task numbered at the left margin: apart too.
    tasks, _ = taskfile.read_text("- [ ] 1. a\n- [ ] 1.1 b\n  - [ ]* 1.1.1 opt\n- [ ] 2. c\n")
    assert [(t.text, t.optional) for t in tasks] == [
        ("1. a\n- [ ] 1.1 b", False), ("1.1.1 opt", True), ("2. c", False)]


def test_kiro_dry_run_lists_the_open_sub_task_and_leaves_the_optional_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_bytes((PLANS / "kiro_open_under_done.md").read_bytes())
    text = CliRunner().invoke(command, ["tasks.md", "--dry-run"]).output
    assert "> 2. Add the settings page  (continues the group's session)" in text
    assert "warning: line 9: ticked, but its sub-task on line 11 is open" in text
    assert "> 1.2 Write property tests for the flag parser  (not run: optional" in text
    plan = orjson.loads(CliRunner().invoke(command, ["tasks.md", "--dry-run", "--json",
                                                     "--include-optional"]).output)
    assert [t["runs"] for t in plan["tasks"]] == [True, True, True, False, False]


def test_kiro_a_run_pays_for_the_open_sub_task_never_for_the_optional_one(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project",
                     plan=(PLANS / "kiro_open_under_done.md").read_text())
    done = agent_loop(work, timeout=180)
    assert done.returncode == 0, done.stderr
    prompts = fake_claude.task_prompts()
    assert len(prompts) == 2, prompts
    assert "1.3 Stream the records as JSON lines" in prompts[0]
    assert "property tests" not in prompts[0] and "property tests" not in prompts[1]
    assert "2.2 Save the form on submit" in prompts[1]

def test_a_prd_runs_requirements_not_acceptance_criteria() -> None:
    plan = read("prd.md")
    assert [t.text for t in plan.tasks] == ["Export the visible table as CSV",
                                            "Keep the column order the user chose"]
    assert [text for _, text, _ in plan.ignored] == ["Export works for 10,000 rows",
                                                    "Feature deployed to staging environment"]
    assert plan.context == "# PRD: Export to CSV\n\nUsers want their data in a spreadsheet."


def test_a_plain_todo_without_boxes_runs_every_item() -> None:
    plan = read("todo.md")
    assert [(t.group, t.text) for t in plan.tasks] == [
        ("Backend", "Add a health endpoint\nreturning the build version"),
        ("Backend", "Rate-limit the login route"), ("Docs", "Describe the health endpoint")]
    assert plan.ignored == () and plan.context == ""


def test_a_checklist_with_every_box_ticked_keeps_its_notes_out() -> None:
    # A finished ralph plan: its notes never turn into work.
    plan = read("ralph_fix_plan.md")
    text = (PLANS / "ralph_fix_plan.md").read_text().replace("- [ ]", "- [x]")
    tasks, reading = taskfile.read_text(text)
    assert [(t.text.splitlines()[0], t.checked) for t in tasks] == \
        [(t.text.splitlines()[0], True) for t in plan.tasks]
    assert [(line, why) for line, _, why in reading.ignored] == \
        [(line, why) for line, _, why in plan.ignored]
    # Said, since a plain list with a task ticked by hand looks the same.
    assert reading.warnings == ["every box is ticked: read as a finished checklist, its 2 plain "
                                "bullet(s) are notes; write `- [ ]` before one to run it"]
    assert taskfile.read_text("- [x] a\n- [ ] b\n- note\n")[1].warnings == []


def test_unknown_boxes_warn_and_a_ticked_section_is_done() -> None:
    tasks, reading = taskfile.read_text("## G\n- [?] odd\n- [ ] fine\n### Task 1: all done\n"
                                        "- [x] a\n- [X] b\n")
    assert [(t.text.splitlines()[0], t.checked) for t in tasks] == [
        ("odd", False), ("fine", False), ("### Task 1: all done", True)]
    assert reading.warnings == ["line 2: unknown box [?]; read as to do"]


def test_an_empty_box_is_an_open_one(tmp_path: Path, fake_claude: FakeClaude) -> None:
    # `- []` (no space in the box) ran as a task named "[] add the login form" in a plain
    # list, and in a checklist was a note never run: a person meant an open box.
    plan = "# Plan\n\n- [] add the login form\n- [x] set up the project\n- a note\n"
    tasks, reading = taskfile.read_text(plan)
    assert [(t.text, t.checked) for t in tasks] == [("add the login form", False),
                                                   ("set up the project", True)]
    assert reading.ignored == [(5, "a note", NOTE)] and reading.warnings == []
    assert [(t.text, t.checked) for t in taskfile.read_text("- [] a\n- b\n")[0]] == \
        [("a", False)]
    work = make_repo(tmp_path / "project", plan=plan)
    shown = agent_loop(work, "--dry-run")
    assert "[1/2] (ungrouped) > add the login form  (starts" in shown.stdout, shown.stdout
    assert "[]" not in shown.stdout
    done = agent_loop(work, "--tick-boxes")
    assert done.returncode == 0, done.stderr
    prompts = fake_claude.task_prompts()
    assert len(prompts) == 1 and "add the login form" in prompts[0], prompts
    assert "[]" not in prompts[0]
    assert (work / "tasks.md").read_text().startswith("# Plan\n\n- [x] add the login form\n")


UNCLOSED = "# Plan\n\n- [ ] add the login form\n\n```bash\nnpm test\n\n## Later\n" \
    "- [ ] add the logout\n- [ ] add tests\n"
FENCE_LINE = ("line 5: this code fence is never closed (```), so it runs to the end of the "
              "file and hides 3 line(s) that look like tasks or headings (the first on line 8), "
              "none of them run; close it with ``` to run them")


def test_an_unclosed_fence_over_tasks_is_said_before_any_agent(tmp_path: Path,
                                                               fake_claude: FakeClaude) -> None:
    # CommonMark runs an unclosed fence to the end of the file: the tasks after it are code,
    # and were never run, unsaid. The reading stands; it is said.
    tasks, reading = taskfile.read_text(UNCLOSED)
    assert [t.text.splitlines()[0] for t in tasks] == ["add the login form"]
    assert reading.warnings == [FENCE_LINE]
    # A fence closed, or one that hides only code, says nothing.
    assert taskfile.read_text(UNCLOSED.replace("npm test\n", "npm test\n```\n"))[1].warnings == []
    assert taskfile.read_text("- [ ] a\n\n```\nls\n# a comment\n")[1].warnings == []
    # Without boxes, a plain item at the margin is a task it hides.
    assert taskfile.read_text("- a\n\n~~~\n- b\n")[1].warnings == [
        "line 3: this code fence is never closed (~~~), so it runs to the end of the file and "
        "hides 1 line(s) that look like tasks or headings (the first on line 4), none of them "
        "run; close it with ~~~ to run them"]
    work = make_repo(tmp_path / "project", plan=UNCLOSED)
    shown = agent_loop(work, "--dry-run")
    assert f"warning: {FENCE_LINE}\n" in shown.stdout, shown.stdout
    done = agent_loop(work)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"agent-loop: warning: {FENCE_LINE}\n", done.stderr
    assert len(fake_claude.task_prompts()) == 1
    # Read from the saved state the next time (the plan unchanged): said again.
    again = agent_loop(work)
    assert again.stderr == done.stderr, again.stderr


def test_dry_run_json_lists_tasks_ignored_and_optional(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_bytes((PLANS / "kiro_tasks.md").read_bytes() +
                                        b"\nNotes:\n\n- [ ] 5. Last\n- a note\n")
    result = CliRunner().invoke(command, ["tasks.md", "--dry-run", "--json"])
    plan = orjson.loads(result.output)
    assert [(t["index"], t["runs"]) for t in plan["tasks"]] == [
        (1, True), (2, True), (3, False), (4, False), (5, True)]
    assert "--include-optional" in plan["tasks"][2]["why_not"]
    assert plan["ignored"] == [{"line": 13, "text": "a note", "why": NOTE}]
    again = CliRunner().invoke(command, ["tasks.md", "--dry-run", "--json", "--include-optional"])
    assert [t["runs"] for t in orjson.loads(again.output)["tasks"]] == [
        True, True, True, False, True]
    text = CliRunner().invoke(command, ["tasks.md", "--dry-run"]).output
    assert f"ignored: line 13: a note ({NOTE})" in text
