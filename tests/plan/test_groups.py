"""Group names: numbers as --dry-run shows them, headings in any case, repeats suffixed."""

from __future__ import annotations

import pytest

from agentloop.errors import TaskFileError
from agentloop.plan import groups
from agentloop.plan.parse import parse

PLAN = """# Demo

## Setup
- [ ] make the repo
- [ ] add a README

## Backend API
- [ ] an endpoint

## Setup
- [ ] the second setup
"""


def test_a_heading_that_comes_back_is_a_group_of_its_own() -> None:
    tasks = parse(PLAN)
    assert [t.group for t in tasks] == ["Setup", "Setup", "Backend API", "Setup (2)"]
    assert groups.in_order([t.group for t in tasks]) == ("Setup", "Backend API", "Setup (2)")


def test_a_heading_written_with_the_suffix_already_is_not_taken_twice() -> None:
    names = groups.numbered(["Setup", "Setup (2)", "Setup"])
    assert names == ["Setup", "Setup (2)", "Setup (3)"]


def test_groups_are_found_by_number_or_heading_in_any_case() -> None:
    names = [t.group for t in parse(PLAN)]
    assert groups.find(names, "2") == "Backend API"
    assert groups.find(names, "backend api") == "Backend API"
    assert groups.find(names, "SETUP (2)") == "Setup (2)"


@pytest.mark.parametrize("spec, message", [
    ("4", "there is no group 4: the plan has 3 (1 Setup, 2 Backend API, 3 Setup (2))"),
    ("0", "there is no group 0"),
    ("Frontend", "no group is named 'Frontend': the plan has 1 Setup, 2 Backend API"),
])
def test_a_group_that_is_not_there_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(TaskFileError) as caught:
        groups.find([t.group for t in parse(PLAN)], spec)
    assert str(caught.value).startswith(message)


def test_repeated_headings_do_not_share_a_session() -> None:
    tasks = parse(PLAN)
    assert tasks[3].group != tasks[0].group
    assert tasks[3].log_name.startswith("004-setup-2--")
