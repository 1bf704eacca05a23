"""A new record's log name (agentloop.state.log_names): unique, numbered as `ls` and a person
read it."""

from __future__ import annotations

from agentloop.state.log_names import LogNames


def test_a_new_task_takes_its_places_number_when_no_record_holds_it() -> None:
    assert LogNames({"001-g--first"}).give("002-g--second") == "002-g--second"


def test_a_number_a_kept_record_holds_goes_one_past_the_largest() -> None:
    # A task deleted above: the place's number is a kept task's, never shared.
    names = LogNames({"002-g--kept", "007-g--last"})
    assert names.give("002-g--new") == "008-g--new"
    assert names.give("002-g--newer") == "009-g--newer"   # what it gave counts too


def test_an_edit_keeps_the_number_of_the_task_it_was() -> None:
    assert LogNames({"001-g--a", "004-g--d"}).give("004-g--b-reworded", was="002-g--b") == \
        "002-g--b-reworded"


def test_a_name_held_already_gets_a_suffix_unless_it_is_the_records_own() -> None:
    assert LogNames({"001-g--a"}).give("003-g--a", was="001-g--a") == "001-g--a-2"
    assert LogNames({"001-g--a"}).give("003-g--a", was="001-g--a", own="001-g--a") == \
        "001-g--a"


def test_a_name_without_a_number_gets_one() -> None:
    assert LogNames({"012-g--a"}).give("plain") == "013-plain"
