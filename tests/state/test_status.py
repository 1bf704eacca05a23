"""The closed set of task statuses and the table of the changes allowed between them."""

from __future__ import annotations

import itertools

import orjson
import pytest

from agentloop.state import status
from agentloop.state.outcome import AttemptOutcome
from agentloop.state.status import TRANSITIONS, BadTransition, TaskStatus

# Every change of status a run makes, written out once more by hand: the table must allow each,
# and refuse every other pair (so a change added to the code without the table fails here).
MADE = {
    ("pending", "running"), ("pending", "skipped"),
    ("running", "completed"), ("running", "failed"), ("running", "interrupted"),
    ("running", "blocked"), ("running", "unapproved"), ("running", "conflicted"),
    ("running", "pending"), ("running", "skipped"),
    ("interrupted", "running"), ("interrupted", "pending"), ("interrupted", "skipped"),
    ("failed", "running"), ("failed", "pending"), ("failed", "skipped"),
    ("blocked", "running"), ("blocked", "pending"), ("blocked", "skipped"),
    ("unapproved", "running"), ("unapproved", "pending"),
    ("conflicted", "completed"), ("conflicted", "running"), ("conflicted", "pending"),
    # Ticked by hand: approved; resolved by hand, not landed.
    ("unapproved", "completed"), ("conflicted", "skipped"),
    ("completed", "pending"), ("completed", "conflicted"), ("skipped", "pending"),
    # A landing held past the lane wait; the next run lands it, finds it conflicts, or it is
    # run again.
    ("running", "held"), ("conflicted", "held"),
    ("held", "completed"), ("held", "conflicted"), ("held", "running"), ("held", "pending"),
    ("held", "skipped"),
    # Interrupted with its change still named, found committed by the next run.
    ("interrupted", "completed"),
    # A serial run's landing beside the next agent: completed once landed; held or conflicted
    # when the checkout refuses it, as a landing in turn would be; --again, or ticked.
    ("running", "landing"), ("landing", "completed"), ("landing", "held"),
    ("landing", "conflicted"), ("landing", "pending"), ("landing", "skipped"),
}


@pytest.mark.parametrize("old,new", list(itertools.product([s.value for s in TaskStatus],
                                                           repeat=2)))
def test_every_status_pair_is_allowed_or_refused_by_the_table(old: str, new: str) -> None:
    if old == new or (old, new) in MADE:
        assert status.check(old, new, 3) is TaskStatus(new)
    else:
        with pytest.raises(BadTransition, match=f"task 3 cannot go from '{old}' to '{new}'"):
            status.check(old, new, 3)


def test_the_table_names_every_status() -> None:
    assert set(TRANSITIONS) == set(TaskStatus)


def test_an_unknown_word_is_refused() -> None:
    with pytest.raises(BadTransition):
        status.check("pending", "done")


def test_members_are_their_words_on_disk_in_text_and_as_keys() -> None:
    assert orjson.dumps({"s": TaskStatus.COMPLETED, "o": AttemptOutcome.LIMITED}) == \
        b'{"s":"completed","o":"limited"}'
    assert f"{TaskStatus.FAILED}" == str(TaskStatus.FAILED) == "failed"
    assert {"completed": 1}.get(TaskStatus.COMPLETED) == 1
    assert TaskStatus.SKIPPED in {"skipped"}
