"""proc.environ: os.environ copied once while it stays the same, and again once it changed; an
environment handed to many children encoded once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop import proc
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


def test_an_agent_in_another_folder_has_its_environment_encoded_once_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Popen encodes each name and value of a str environment in Python at every start: forty
    # variables, eighty calls a task. The run's dict is encoded once, and not at all when it
    # is just ours.
    other = tmp_path / "lane"
    other.mkdir()
    encoded: list[str] = []
    real = os.fsencode

    def counted(name: str | bytes) -> bytes:
        if isinstance(name, str):
            encoded.append(name)
        return real(name)

    env = {**os.environ, "AL_SPAWN_PROBE": "one"}
    proc.stream(["true"], lambda line: None, cwd=other, env=env)
    monkeypatch.setattr(os, "fsencode", counted)
    for _ in range(3):
        proc.stream(["true"], lambda line: None, cwd=other, env=env)
        proc.stream(["true"], lambda line: None, cwd=other, env=dict(os.environ))
    assert sum(name in env for name in encoded) == len(env)  # each name once: the first reuse
