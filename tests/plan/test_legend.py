"""Bracketed lines that are not tasks (a plan's legend, notes about the file) and Kiro sub-tasks
written at the left margin, folded into their parent by their numbers (fixtures in
tests/support/fixtures/plans/, written for these tests in each style of the plan formats)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from agentloop.cli import command
from agentloop.plan import parse as taskfile

PLANS = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "plans"
NOTE = "a plain bullet in a checklist: a note, not a task"


def explains(label: str) -> str:
    return f"explains the [{label}] marker: a legend line, not a task"


def under(label: str, heading: str) -> str:
    return f"a [{label}] line under \"{heading}\": a note about the plan, not a task"


def dry_run(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_bytes((PLANS / name).read_bytes())
    result = CliRunner().invoke(command, ["tasks.md", "--dry-run", "--json", "--vcs", "none"])
    assert result.exit_code == 0, result.output
    return orjson.loads(result.output)


def runs(plan: dict) -> list[str]:
    return [t["summary"] for t in plan["tasks"] if t["runs"]]


def test_speckit_legend_lines_are_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = dry_run(tmp_path, "speckit_legend.md", monkeypatch)
    assert [(t["group"], t["summary"]) for t in plan["tasks"]] == [
        ("Phase 1: Setup", "T001 Create `app/` and `tests/` with an empty package in…"),
        ("Phase 1: Setup", "T002 [P] Add the linter settings to `pyproject.toml`"),
        ("Phase 2: User Story 1 - Save a book (Priority: P1)",
         "T010 [P] [US1] Book model in `app/models/book.py`"),
        ("Phase 2: User Story 1 - Save a book (Priority: P1)",
         "T011 [US1] `save` command in `app/cli.py` (depends on T010)")]
    ignored = {i["line"]: (i["text"], i["why"]) for i in plan["ignored"]}
    assert ignored[8] == ("**[P]**: may run alongside other [P] tasks (it touches other files)",
                          explains("P"))
    assert ignored[10] == ("[P] marks tasks that can run in parallel", explains("P"))
    assert ignored[35] == ("[P] tasks = different files, no dependencies", explains("P"))
    assert ignored[36][1] == explains("Story")
    assert ignored[37] == ("Commit after each task or logical group", NOTE)
    assert plan["warnings"] == [] and plan["folded"] == []


def test_speckit_legend_in_chinese(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = dry_run(tmp_path, "speckit_legend_zh.md", monkeypatch)
    assert runs(plan) == ["T001 创建 `app/` 和 `tests/` 目录",
                          "T002 [P] 在 `pyproject.toml` 中配置代码检查",
                          "T010 [P] [US1] 在 `app/models/book.py` 中创建书籍模型",
                          "T011 [US1] 在 `app/cli.py` 中实现 `save` 命令"]
    assert {i["line"]: (i["text"], i["why"]) for i in plan["ignored"]} == {
        7: ("**[P]**：可以并行运行（不同文件，无依赖关系）", explains("P")),
        8: ("**[Story]**：此任务所属的用户故事（如 US1、US2）", explains("Story")),
        26: ("[P] 任务 = 不同文件，无依赖关系", explains("P")),
        27: ("[Story] 标签将任务映射到具体的用户故事，便于追踪", explains("Story")),
        28: ("[US1] 可以单独交付和演示", under("US1", "注意事项")),
        29: ("每个任务或逻辑组完成后提交", NOTE)}
    assert plan["warnings"] == []


def test_a_box_legend_and_a_marker_explained_in_notes(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    plan = dry_run(tmp_path, "ralph_legend.md", monkeypatch)
    assert [(t["summary"], t["runs"]) for t in plan["tasks"]] == [
        ("Make `import` skip rows it has already seen", True),
        ("Show a progress bar for long imports", True), ("Read CSV files", False)]
    legend = "a legend, not a task"
    assert [(i["text"], i["why"]) for i in plan["ignored"]] == [
        ("[ ] not started", f"a [ ] line under \"Key\": {legend}"),
        ("[x] finished", f"a [x] line under \"Key\": {legend}"),
        ("[~] in progress", f"a [~] line under \"Key\": {legend}"),
        ("[!] means blocked: ask before working on it", explains("!")),
        ("Keep each commit to one task", NOTE)]
    assert plan["warnings"] == []


@pytest.mark.parametrize("text, why", [
    ("- [P] tasks = different files, no dependencies\n", explains("P")),
    ("- [P] marks parallelizable tasks\n", explains("P")),
    ("- **[P]**: different files\n", explains("P")),
    ("- `[US1]` = the first user story\n", explains("US1")),
    ("- [P] 任务 = 不同文件，无依赖关系\n", explains("P")),
    ("- [P] 表示可以并行\n", explains("P")),
    ("- [P]は並列に実行できる\n", explains("P")),
    ("- [P]는 병렬로 실행 가능\n", explains("P")),
    ("- [ ] = not started\n", "explains the [ ] box: a legend line, not a task"),
    ("## Notes\n- [P] parallel work\n", under("P", "Notes")),
    ("## Conventions\n- [US2] second story\n", under("US2", "Conventions")),
    ("## 说明\n- [P] 可并行\n", under("P", "说明")),
    ("## 备注\n### 其他\n- [P] 可并行\n", under("P", "备注")),
    ("## References\n- [1] Smith, *Parallel plans*, 2020\n", under("1", "References")),
    ("## Legend\n- [x] done\n", "a [x] line under \"Legend\": a legend, not a task"),
])
def test_a_bracket_that_is_explained_or_under_notes_is_a_note(text: str, why: str) -> None:
    tasks, reading = taskfile.read_text("## Work\n- [ ] real task\n" + text)
    assert [t.text for t in tasks] == ["real task"]
    assert [w for _, _, w in reading.ignored] == [why] and reading.warnings == []


def test_a_bracket_anywhere_else_keeps_todays_reading() -> None:
    tasks, reading = taskfile.read_text(
        "## Phase 1\n- [ ] T001 set up\n- [P] Configure linting\n- [US1] Card model\n"
        "## Notes\n- [ ] update the changelog\n- [P](#parallel) links are plain notes\n")
    assert [t.text for t in tasks] == ["T001 set up", "Configure linting", "update the changelog"]
    assert reading.warnings == ["line 3: unknown box [P]; read as to do"]
    assert [(n, w) for n, _, w in reading.ignored] == [(4, NOTE), (7, NOTE)]
    # A heading that only starts with a legend word is not a legend.
    tasks, reading = taskfile.read_text("## Key features\n- [ ] Search by title\n"
                                        "## Format conversions\n- [ ] [P] CSV export\n")
    assert [t.text for t in tasks] == ["Search by title", "[P] CSV export"]
    tasks, reading = taskfile.read_text("## 작업\n- [ ] 설정\n- [P] 은행 API 연동\n")
    assert [t.text for t in tasks] == ["설정", "은행 API 연동"]   # a word, not a particle
    # Without open boxes every item is a task, the bracketed ones too, unless a legend.
    tasks, reading = taskfile.read_text("- [US1] Card model\n- [P] = parallel\n")
    assert [t.text for t in tasks] == ["[US1] Card model"]


def test_kiro_sub_tasks_at_the_left_margin_fold_into_their_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = dry_run(tmp_path, "kiro_flat.md", monkeypatch)
    assert [(t["summary"], t["runs"]) for t in plan["tasks"]] == [
        ("1. Set up the editor shell", True), ("2. Build the sync client", True),
        ("3. Property tests for the merge function", False),
        ("4. Spike the storage format", False)]
    assert plan["tasks"][0]["text"] == (
        "1. Set up the editor shell\n"
        "- [x] 1.1 Create the `Editor` component with an empty toolbar\n"
        "  - _Requirements: 1.1_\n"
        "- [ ] 1.2 Wire the component to the document store\n"
        "  - _Requirements: 1.2, 2.1_")
    assert [(f["line"], f["into_line"]) for f in plan["folded"]] == [
        (4, 3), (6, 3), (10, 9), (11, 9), (15, 14)]
    assert plan["ignored"] == [] and plan["warnings"] == []
    text = CliRunner().invoke(command, ["tasks.md", "--dry-run"]).output
    assert ("folded: line 4: 1.1 Create the `Editor` component with an empty toolbar (numbered "
            "under the task on line 3: part of that task)") in text
    assert "4 task(s), 2 to run" in text


def test_kiro_sub_tasks_in_chinese_fold_at_every_depth(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plan = dry_run(tmp_path, "kiro_flat_zh.md", monkeypatch)
    assert [(t["summary"], t["runs"]) for t in plan["tasks"]] == [
        ("1. 搭建编辑器外壳", True), ("2. 构建同步客户端", True), ("3. 存储格式原型", False)]
    assert "- [ ] 2.1.1 为重试写单元测试" in plan["tasks"][1]["text"]
    assert [f["into_line"] for f in plan["folded"]] == [3, 3, 7, 7, 7]


def test_folding_reads_like_indenting() -> None:
    flat = taskfile.read_text("- [ ] 1. A\n- [x] 1.1 B\n- [ ] 1.2 C\n- [ ] 2. D\n")[0]
    indented = taskfile.read_text("- [ ] 1. A\n  - [x] 1.1 B\n  - [ ] 1.2 C\n- [ ] 2. D\n")[0]
    assert [t.text for t in flat] == [t.text for t in indented]
    assert flat[0].parts == ("1. A", "1.1 B", "1.2 C") and indented[0].parts == ()


@pytest.mark.parametrize("text, count", [
    ("- [ ] 1.1 A\n- [ ] 1.2 B\n", 2),               # no parent: each its own task
    ("- [ ] 1. A\n- [ ] 10.1 B\n", 2),               # 10.1 is not under 1
    ("- [ ] 1. A\n- [ ] 2.1 B\n", 2),                # nor 2.1
    ("- [ ] 1. A\n## G\n- [ ] 1.1 B\n", 2),           # a heading ends the parent
    ("- [ ] 1. A\n- [ ] other\n- [ ] 1.1 B\n", 3),   # only right under its parent's unit
    ("- [ ] 1. A\n- 1.1 a note\n- [ ] 1.2 B\n", 1),  # a note between does not part them
])
def test_what_does_not_fold(text: str, count: int) -> None:
    assert len(taskfile.read_text(text)[0]) == count


def test_a_legend_of_boxes_does_not_make_a_plain_list_a_checklist() -> None:
    tasks, reading = taskfile.read_text("## Key\n- [ ] to do\n- [x] done\n"
                                        "## Backend\n- Add a health endpoint\n- [ ] = open\n")
    assert [t.text for t in tasks] == ["Add a health endpoint"]
    assert [n for n, _, _ in reading.ignored] == [2, 3, 6]
