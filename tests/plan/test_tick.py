"""Ticking a landed task's boxes in a real plan file (agentloop.plan.tick): the task's line and
its sub-items' only, every other byte kept, nothing written when the line changed or the file
moved under us."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentloop.plan import parse
from agentloop.plan import tick as ticking
from agentloop.plan.boxes import task_key
from agentloop.plan.tick import tick


def plan(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "tasks.md"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def ticked(path: Path, index: int) -> str:
    """Tick task `index` of the plan at `path` as the run knows it; the note, if any."""
    task = parse.load(path).tasks[index - 1]
    return tick(path, task.group, task.text, task.line).note


@pytest.mark.parametrize(("before", "index", "after"), [
    # ralph: a flat checklist with notes
    ("# Plan\n- [ ] one\n- [ ] two\n- a note\n", 1, "# Plan\n- [x] one\n- [ ] two\n- a note\n"),
    # spec-kit: ids, [P], a task spanning lines
    ("## Phase 1\n- [ ] T001 [P] make the model\n  in src/models.py\n- [ ] T002 tests\n", 1,
     "## Phase 1\n- [x] T001 [P] make the model\n  in src/models.py\n- [ ] T002 tests\n"),
    # Kiro: optional star, numbered sub-items folded into their task (ticked with it)
    ("# Tasks\n- [ ] 1. Set up\n- [ ] 1.1 the folder\n- [ ]* 2. Extra\n- [ ] 3. Last\n", 1,
     "# Tasks\n- [x] 1. Set up\n- [x] 1.1 the folder\n- [ ]* 2. Extra\n- [ ] 3. Last\n"),
    ("- [ ]* 1. Extra\n- [ ] 2. Last\n", 1, "- [x]* 1. Extra\n- [ ] 2. Last\n"),
    # Kiro: a ticked task whose open sub-task ran; an optional sub-task, a task of its own, is
    # not ticked with its parent, and is ticked alone
    ("- [x] 1. A\n  - [ ] 1.1 b\n- [ ] 2. C\n", 1, "- [x] 1. A\n  - [x] 1.1 b\n- [ ] 2. C\n"),
    ("- [ ] 1. A\n  - [ ]* 1.1 opt\n  - [ ] 1.2 b\n", 1,
     "- [x] 1. A\n  - [ ]* 1.1 opt\n  - [x] 1.2 b\n"),
    ("- [ ] 1. A\n  - [ ]* 1.1 opt\n  - [ ] 1.2 b\n", 2,
     "- [ ] 1. A\n  - [x]* 1.1 opt\n  - [ ] 1.2 b\n"),
    # an empty box, as typed in haste: an open one
    ("- [] one\n- [ ] two\n", 1, "- [x] one\n- [ ] two\n"),
    ("- [ ] parent\n  - [] child\n", 1, "- [x] parent\n  - [x] child\n"),
    # an ordered list, a tab after the marker, an in-progress box
    ("1. [ ] one\n2.\t[~] two\n", 2, "1. [ ] one\n2.\t[x] two\n"),
    # nested boxes, at any depth, are ticked with their task; a plain bullet and a fence stay
    ("- [ ] parent\n  - [ ] child\n    1. [~] deeper\n  - plain\n  ```\n  - [ ] code\n  ```\n"
     "- [ ] next\n",
     1, "- [x] parent\n  - [x] child\n    1. [x] deeper\n  - plain\n  ```\n  - [ ] code\n  ```\n"
     "- [ ] next\n"),
    # a task section: its steps are its boxes
    ("## G\n### Task 1: one\n- [ ] step a\n- [x] step b\n### Task 2: two\n- [ ] step\n", 1,
     "## G\n### Task 1: one\n- [x] step a\n- [x] step b\n### Task 2: two\n- [ ] step\n"),
])
def test_the_tasks_boxes_alone_are_ticked(tmp_path: Path, before: str, index: int,
                                          after: str) -> None:
    path = plan(tmp_path, before)
    assert ticked(path, index) == ""
    assert path.read_text() == after
    # The next reading: the same tasks, this one done.
    again = parse.load(path).tasks
    assert [(t.group, task_key(t.text)) for t in again] == \
        [(t.group, task_key(t.text)) for t in parse.parse(before)]
    assert again[index - 1].checked


def test_crlf_line_ends_and_a_bom_are_kept_byte_for_byte(tmp_path: Path) -> None:
    path = plan(tmp_path, b"\xef\xbb\xbf- [ ] one\r\n  - [ ] sub\r\n- [ ] two\r\n\r\n- note\r\n")
    assert ticked(path, 1) == ""
    assert ticked(path, 2) == ""
    assert path.read_bytes() == \
        b"\xef\xbb\xbf- [x] one\r\n  - [x] sub\r\n- [x] two\r\n\r\n- note\r\n"


def test_every_box_of_a_mixed_checklist_is_ticked_and_its_notes_stay_notes(
        tmp_path: Path) -> None:
    # Boxed tasks, plain bullets (notes), nested items: every task lands in turn.
    before = ("# Plan\n\n- [ ] one\n  - [ ] its step\n  - a detail\n- a note\n\n## Later\n"
              "- [ ] two\n- another note\n")
    path = plan(tmp_path, before)
    tasks = parse.load(path).tasks
    assert [t.summary for t in tasks] == ["one", "two"]
    for task in tasks:
        assert tick(path, task.group, task.text, task.line).note == ""
    assert path.read_text() == before.replace("[ ]", "[x]")
    # Every box ticked: the plain bullets are still notes, not work for the next run.
    again = parse.load(path)
    assert [(t.summary, t.checked) for t in again.tasks] == [("one", True), ("two", True)]
    assert [text for _, text, _ in again.ignored] == ["a note", "another note"]


def test_a_reworded_or_removed_task_is_not_ticked(tmp_path: Path) -> None:
    path = plan(tmp_path, "- [ ] one\n- [ ] two\n")
    task = parse.load(path).tasks[0]
    path.write_text("- [ ] one, reworded\n- [ ] two\n")
    done = tick(path, task.group, task.text, task.line)
    assert "no longer has it" in done.note and done.after == ""
    assert path.read_text() == "- [ ] one, reworded\n- [ ] two\n"


def test_a_task_that_moved_is_found_by_its_text_and_a_twin_by_its_line(tmp_path: Path) -> None:
    path = plan(tmp_path, "- [ ] one\n- [ ] two\n- [ ] one\n")
    first, _, twin = parse.load(path).tasks
    assert tick(path, twin.group, twin.text, twin.line).note == ""
    assert path.read_text() == "- [ ] one\n- [ ] two\n- [x] one\n"
    path.write_text("- [ ] new above\n- [ ] two\n- [ ] one\n")   # moved, and alone again
    assert tick(path, first.group, first.text, first.line).note == ""
    assert path.read_text() == "- [ ] new above\n- [ ] two\n- [x] one\n"
    path.write_text("- [ ] x\n- [ ] one\n- [ ] one\n")   # twins, neither at its line
    assert "more than once" in tick(path, first.group, first.text, first.line).note


def test_ticked_already_or_without_a_box_is_left_alone(tmp_path: Path) -> None:
    for text in ("- [x] one\n- [ ] two\n", "- one\n- two\n"):
        path = plan(tmp_path, text)
        task = parse.parse(text)[0]
        done = tick(path, task.group, task.text, task.line)
        assert done.note == "" and done.after == "" and path.read_text() == text


def test_an_edit_made_while_ticking_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = plan(tmp_path, "- [ ] one\n- [ ] two\n")
    real = ticking.scratch

    def user_saves_first(*args: Any, **kwargs: Any) -> tuple[int, str]:
        # The user's editor saves between agent-loop's read and its replace.
        path.write_text("- [ ] one\n- [ ] two\n- [ ] three, mine\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(ticking, "scratch", user_saves_first)
    assert "changed while agent-loop was ticking" in ticked(path, 1)
    assert path.read_text() == "- [ ] one\n- [ ] two\n- [ ] three, mine\n"
    assert [p.name for p in tmp_path.iterdir()] == ["tasks.md"]   # no temporary file left


def test_a_symlinked_plan_keeps_its_link_and_its_mode(tmp_path: Path) -> None:
    target = plan(tmp_path, "- [ ] one\n- [ ] two\n")
    target.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    task = parse.load(link).tasks[0]
    done = tick(link, task.group, task.text, task.line)
    assert done.note == ""
    assert link.is_symlink() and target.read_text() == "- [x] one\n- [ ] two\n"
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert done.before == parse.file_hash(b"- [ ] one\n- [ ] two\n")
    assert done.after == parse.file_hash(target.read_bytes())
