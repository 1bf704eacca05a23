"""proc.run's `meanwhile`: what starts a process of its own to run beside a command is called
once that command has started, so the command waited for starts first; and the work held for
the next wait on a command (during_next_wait) or for the next agent's start (before_next_stream)."""

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


def test_work_held_for_the_next_wait_comes_once_that_command_has_started() -> None:
    # A thread's work (agentloop.run.start readies the first agent so) is started while the
    # caller waits on a child, not while it runs Python of its own; once.
    seen: list[int] = []
    before = proc.started()
    proc.during_next_wait(lambda: seen.append(proc.started()))
    proc.run(["true"])
    proc.run(["true"])
    assert seen == [before + 1]


def test_a_stop_as_held_work_starts_reaps_the_command() -> None:
    ours = set(reaper._ours)

    def stopped() -> None:
        raise KeyboardInterrupt
    proc.during_next_wait(stopped)
    with pytest.raises(KeyboardInterrupt):
        proc.run(["true"])
    assert reaper._ours == ours  # reaped: no child of ours left behind


def test_what_the_next_agent_waits_for_comes_before_it_starts() -> None:
    seen: list[int] = []
    before = proc.started()
    proc.before_next_stream(lambda: seen.append(proc.started()))
    done = proc.stream(["sh", "-c", "echo out"], on_line=lambda line: None)
    proc.stream(["true"], on_line=lambda line: None)
    assert seen == [before] and done.returncode == 0
