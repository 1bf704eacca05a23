"""proc.environ: os.environ copied once while it stays the same, and again once it changed."""

from __future__ import annotations

import os

import pytest

from agentloop.proc import environ


def test_a_copy_that_follows_every_change(monkeypatch: pytest.MonkeyPatch) -> None:
    first = environ.current()
    assert dict(first) == dict(os.environ)
    assert environ.current() is first  # unchanged: the same copy, not made again
    monkeypatch.setenv("AGENT_LOOP_TEST_ENVIRON", "one")
    assert environ.current()["AGENT_LOOP_TEST_ENVIRON"] == "one"
    monkeypatch.setenv("AGENT_LOOP_TEST_ENVIRON", "two")  # a value changed, not the names
    assert environ.current()["AGENT_LOOP_TEST_ENVIRON"] == "two"
    monkeypatch.delenv("AGENT_LOOP_TEST_ENVIRON")
    assert "AGENT_LOOP_TEST_ENVIRON" not in environ.current()
    with pytest.raises(TypeError):
        environ.current()["PATH"] = "/nowhere"  # type: ignore[index]
