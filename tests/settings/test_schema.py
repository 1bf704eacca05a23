"""A setting's value converted without click (agentloop.options.values) is the value click's type
gives, and a value it leaves to click gets click's own error: every key, from a file and from a
variable, both ways."""

from __future__ import annotations

from typing import Any

import pytest

from agentloop.errors import SettingsError
from agentloop.options.values import NotSure
from agentloop.settings import click_types, schema

# What a TOML file may give a key, of every kind and type, the wrong ones included.
FILE_VALUES = [True, False, 0, 1, 5, 9, -1, 2.5, 10 ** 30, float("inf"), float("nan"), "", "x",
               "3", "git", "svn", "AUTO", "claude", "codex", "rehearse", "nope", "10m", " 1h ",
               "90", "A=1", "m=1/2/3", ["a", "b"], [1], {"A": "1"}, {"1A": "x"}, {"A": 1},
               {"m": "1/2/3"}, {"m": "x"}, {"A": True}]
# What a variable may hold: one line of text.
TEXT_VALUES = ["1", "0", "true", "True", " yes", "off", "maybe", "5", "07", "-1", "2.5", ".5",
               "1e3", "x", "git", "AUTO", "claude", "rehearse", "10m", "1.5h", "A=1", "1A=x",
               "m=1/2/3", "m=x", "'unclosed", "a b", "A=1 B=2", "٣", "9" * 5000]


def outcome(convert: Any, spec: schema.Spec, value: Any) -> tuple[str, Any]:
    """What a conversion gives, typed (5 and 5.0 differ; nan is itself), or the error it says."""
    try:
        got = convert(spec, value, "agent-loop.toml:1")
    except SettingsError as exc:
        return ("error", str(exc))
    return ("value", repr(got), type(got).__name__)


def by_click_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def unsure(*args: Any, **kwargs: Any) -> Any:
        raise NotSure

    monkeypatch.setattr(schema, "converted", unsure)


@pytest.mark.parametrize("convert, values", [(schema.from_file, FILE_VALUES),
                                             (schema.from_text, TEXT_VALUES)])
def test_a_setting_is_converted_as_click_converts_it(monkeypatch: pytest.MonkeyPatch,
                                                     convert: Any, values: list[Any]) -> None:
    specs = schema.specs()
    ours = {(key, repr(v)): outcome(convert, spec, v) for key, spec in specs.items()
            for v in values}
    by_click_only(monkeypatch)
    theirs = {(key, repr(v)): outcome(convert, spec, v) for key, spec in specs.items()
              for v in values}
    differ = [(k, ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]]
    assert not differ, differ[:5]
    assert sum(o[0] == "value" for o in ours.values()) > 100   # the values were taken


def test_the_usual_settings_are_converted_without_click(monkeypatch: pytest.MonkeyPatch) -> None:
    # Those a settings file or a variable holds most: click's types are never asked.
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"click's type asked for {args}")

    monkeypatch.setattr(click_types, "by_click", refused)
    specs = schema.specs()
    for key, value in [("budget", 5), ("max-attempts", 3), ("vcs", "git"), ("agent", "codex"),
                       ("check", ["pytest -q"]), ("env", {"A": "1"}), ("lane-wait", "10m"),
                       ("prices", {"m": "1/2/3"}), ("model", "m"), ("review", True),
                       ("task-timeout", 600), ("backoff", 2.5), ("env-exclude", "SECRET")]:
        schema.from_file(specs[key], value, "agent-loop.toml:1")
    for key, text in [("review", "false"), ("max-failures", "4"), ("sandbox", "1"),
                      ("task-timeout", "600"), ("env-exclude", "SECRET"), ("check", "'a b' c"),
                      ("lane-wait", "1h"), ("budget", "2.5"), ("env", "A=1 B=2")]:
        schema.from_text(specs[key], text, "environment X")
