"""run/remembered.py: what a plain re-run does with the options the plan's last run had. Checks
are how the work is done: a re-run with none of its own runs without the last run's and names
them, with the command that keeps them; a re-run with checks of its own has chosen, and hears
nothing of the last run's."""

from __future__ import annotations

from agentloop.options.record import RunOptions
from agentloop.run.remembered import recall

KEPT = {"check": ["true", "make test"]}


def test_a_rerun_with_no_checks_of_its_own_runs_without_the_last_runs_and_names_them() -> None:
    options, note = recall(RunOptions(command=("tasks.md",)), KEPT)
    assert options.check == ()
    assert note == ("the last run of this plan had --check true --check 'make test', which "
                    "this run goes without; to keep them: agent-loop tasks.md --check true "
                    "--check 'make test'")


def test_a_rerun_with_checks_of_its_own_names_none_of_the_last_runs() -> None:
    options, note = recall(RunOptions(command=("tasks.md",), check=("ruff check .",)), KEPT)
    assert options.check == ("ruff check .",)
    assert note is None


def test_a_plan_whose_last_run_had_no_checks_names_none() -> None:
    for kept in ({}, {"check": None}, {"check": []}):
        options, note = recall(RunOptions(command=("tasks.md",)), kept)
        assert options.check == () and note is None
