"""proc.run's `meanwhile`: what starts a process of its own to run beside a command is called
once that command has started, so the command waited for starts first."""

from __future__ import annotations

import pytest

from agentloop import proc
from agentloop.proc import reaper


def test_meanwhile_comes_once_the_command_has_started() -> None:
    seen: list[int] = []
    before = proc.started()
    done = proc.run(["sh", "-c", "echo out"], meanwhile=lambda: seen.append(proc.started()))
    assert seen == [before + 1] and done.stdout == "out\n"


def test_a_failure_meanwhile_goes_on_up_with_the_command_reaped() -> None:
    ours = set(reaper._ours)

    def fails() -> None:
        raise RuntimeError("meanwhile")
    with pytest.raises(RuntimeError, match="meanwhile"):
        proc.run(["true"], meanwhile=fails)
    assert reaper._ours == ours  # reaped: no child of ours left behind
