"""`Depends on:` right under a group's heading: the groups it waits for, named as --group names
them; any other wording stays text; a missing group or a circle is an error before anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.errors import TaskFileError
from agentloop.plan import parse
from agentloop.plan.depends import waves
from agentloop.state.schema import State, TaskState

PLAN = """\
# Shop

Phase 2 depends on Phase 1 (prose: stays context).

## Setup
- make the skeleton

## Backend API
Depends on: setup

- add the api
- add its tests

## Frontend
Depends on: Backend API, 1

- add the page

## Docs
- write the docs
"""


def read(tmp_path: Path, text: str) -> parse.TaskFile:
    path = tmp_path / "tasks.md"
    path.write_text(text)
    return parse.from_bytes(path, text.encode())


def test_dependencies_are_read_and_never_task_text(tmp_path: Path) -> None:
    plan = read(tmp_path, PLAN)
    assert dict(plan.depends) == {"Backend API": ("Setup",), "Frontend": ("Backend API", "Setup")}
    assert [t.text for t in plan.tasks] == ["make the skeleton", "add the api", "add its tests",
                                            "add the page", "write the docs"]
    assert "Depends on:" not in plan.context and "Phase 2 depends on Phase 1" in plan.context
    groups = [t.group for t in plan.tasks]
    assert waves(groups, dict(plan.depends)) == [["Setup", "Docs"], ["Backend API"],
                                                 ["Frontend"]]
    task = TaskState.from_task(plan.tasks[0])
    state = State("tasks.md", plan.sha256, [task], depends={"Backend API": ["Setup"]})
    assert State.__name__ and b'"depends"' in state.to_bytes()


def test_other_wording_stays_text(tmp_path: Path) -> None:
    plan = read(tmp_path, "## A\nThis depends on: B\n\n- one\n\n## B\n- two\n"
                          "  Depends on: A\n")
    assert plan.depends == ()
    assert plan.tasks[1].text == "two\nDepends on: A"


@pytest.mark.parametrize("text, error", [
    ("## A\nDepends on: Nope\n\n- one\n", r"line 2: Depends on: no group is named 'Nope'"),
    ("## A\nDepends on: 3\n\n- one\n## B\n- two\n", r"there is no group 3"),
    ("## A\nDepends on: B\n\n- one\n## B\nDepends on: A\n\n- two\n",
     r"circle: A -> B -> A"),
    ("## A\nDepends on: a\n\n- one\n", r"cannot depend on itself"),
])
def test_a_missing_group_or_a_circle_is_an_error(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(TaskFileError, match=error):
        read(tmp_path, text)
