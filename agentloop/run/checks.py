"""The user's checks: their own command lines, run in the repository root, whose exit codes decide
whether a task is done.

A check runs through the user's shell, in a process group of its own, with a timeout, via
proc.stream. Its stdout and stderr, of any size, go line by line to the task's check log; only a
bounded tail stays in memory, for the agent's fix prompt and the console.

Every check of a round runs, even after one failed: the agent then sees every failure in one fix
run instead of paying a fix run per check, and the baseline names every check the user must fix.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from agentloop import proc
from agentloop.errors import CheckFailed
from agentloop.ondemand import dataclass

# How much of a check's output is kept for the agent and the console: the last lines, and of
# those at most this many bytes (a single huge line is cut to its end).
TAIL_LINES = 60
TAIL_BYTES = 4096
FALLBACK_SHELL = "/bin/sh"
FLUSH_SECONDS = 0.5
# /bin/sh points stderr at stdout, then becomes the user's shell with the command line as given:
# the redirection works whatever the user's shell is (fish has no `exec 2>&1`), at no extra
# process. "$0" is the user's shell, "$1" their command line.
LAUNCH = 'exec 2>&1; exec "$0" -c "$1"'


@dataclass(frozen=True)
class CheckRun:
    """One run of one check: its command, how it ended, how long it took, where its output is.

    `round` counts the fix runs before it: 0 after the agent's run (and at baseline), 1 after
    the first fix run. `tail` is the end of its output (at most TAIL_LINES / TAIL_BYTES).
    """

    command: str
    exit_code: int
    seconds: float
    log: str
    round: int
    timed_out: bool
    tail: str

    @property
    def passed(self) -> bool:
        """Exit 0 within its time."""
        return self.exit_code == 0 and not self.timed_out


def user_shell() -> str:
    """The user's shell ($SHELL) when it can run, else /bin/sh."""
    shell = os.environ.get("SHELL", "")
    if shell and os.path.isabs(shell) and os.access(shell, os.X_OK):
        return shell
    return FALLBACK_SHELL


def argv(command: str) -> list[str]:
    """The argv that runs `command` as the user typed it, stderr joined to stdout."""
    return [FALLBACK_SHELL, "-c", LAUNCH, user_shell(), command]


class _Tail:
    """The last lines of a stream, bounded in lines and bytes."""

    def __init__(self) -> None:
        self._lines: deque[bytes] = deque(maxlen=TAIL_LINES)

    def add(self, line: bytes) -> None:
        self._lines.append(line[-TAIL_BYTES:])

    def text(self) -> str:
        data = b"".join(self._lines)[-TAIL_BYTES:]
        return data.decode("utf-8", "replace").replace("\x00", "\ufffd")


def run_check(command: str, cwd: Path, log: IO[bytes], log_name: str, timeout: float | None,
              round_: int, env: Mapping[str, str] | None = None,
              confine: Callable[[list[str]], list[str]] | None = None) -> CheckRun:
    """Run one check, appending its output to `log`; a timeout is a failed run. `env`: its
    environment, when not ours (a git hook's index); `confine`: what wraps its argv (the run's
    sandbox, for a repository's hook)."""
    tail = _Tail()
    log.write(f"$ {command}\n".encode("utf-8", "replace"))
    flushed = [time.monotonic()]

    def on_line(line: bytes) -> None:
        log.write(line)
        tail.add(line)
        # `tail -f` on the log follows a long check, without a system call per line.
        if time.monotonic() - flushed[0] > FLUSH_SECONDS:
            log.flush()
            flushed[0] = time.monotonic()

    began = time.monotonic()
    started = argv(command) if confine is None else confine(argv(command))
    done = proc.stream(started, on_line, cwd=cwd, env=env, timeout=timeout)
    seconds = time.monotonic() - began
    if done.timed_out:
        note = timeout_message(command, timeout or 0)
        log.write(f"\n[{note}]\n".encode("utf-8", "replace"))
        tail.add(f"\n[{note}]\n".encode())
    log.write(f"[exit {done.returncode} after {seconds:.1f}s; round {round_}]\n\n".encode())
    log.flush()
    return CheckRun(command, done.returncode, round(seconds, 3), log_name, round_,
                    done.timed_out, tail.text())


def run_checks(commands: Sequence[str], cwd: Path, log_path: Path, timeout: float | None,
               round_: int = 0, log_name: str | None = None) -> tuple[CheckRun, ...]:
    """Run every check once (all of them, even after a failure), appending to `log_path`.

    `log_name` is how the log is recorded (e.g. relative to the store); the path by default.
    Ctrl+C stops the running check's whole group and raises Interrupted.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    name = log_name if log_name is not None else str(log_path)
    runs: list[CheckRun] = []
    with open(log_path, "ab") as log:
        for command in commands:
            runs.append(run_check(command, cwd, log, name, timeout, round_))
    return tuple(runs)


def baseline(commands: Sequence[str], cwd: Path, log_path: Path, timeout: float | None,
             log_name: str | None = None) -> tuple[CheckRun, ...]:
    """Run every check before any agent runs; raise CheckFailed naming those that fail."""
    runs = run_checks(commands, cwd, log_path, timeout, 0, log_name)
    failed = [r for r in runs if not r.passed]
    if failed:
        raise CheckFailed(baseline_message(failed))
    return runs


def _ending(run: CheckRun) -> str:
    return "timed out" if run.timed_out else f"exit {run.exit_code}"


def baseline_message(failed: Sequence[CheckRun], advice: Mapping[str, str] | None = None,
                     when: str = "before any task ran") -> str:
    """Why the run stops before any agent is paid for: each failing check and its output.
    `advice`: what to do about a check other than fix the tree or the command (a commit-msg
    hook that refuses agent-loop's message: agentloop.run.repo_hooks), by its command."""
    said = advice or {}
    parts = [f"check `{r.command}` fails {when} ({_ending(r)}); "
             f"{said.get(r.command, 'fix the tree or the command')}. Its output ends "
             f"with:\n{_indent(r.tail)}" for r in failed]
    return "\n".join(parts) + f"\n(full output: {failed[0].log})"


def timeout_message(command: str, timeout: float) -> str:
    """The note for a check stopped at its timeout."""
    return (f"check `{command}` timed out after {timeout:g}s; it and every process it started "
            "were stopped (raise --check-timeout if it needs longer)")


def _indent(text: str) -> str:
    lines = text.rstrip("\n").splitlines() or ["(no output)"]
    return "\n".join("    " + line for line in lines)


def fix_prompt(failed: Sequence[CheckRun], round_: int, rounds: int) -> str:
    """The fix run's prompt: each failing check, how it ended, and the end of its output."""
    blocks = []
    for run in failed:
        how = ("was stopped after its time limit" if run.timed_out
               else f"exited with code {run.exit_code}")
        blocks.append(f"$ {run.command}\n(it {how}; the end of its output follows)\n"
                      f"{run.tail.rstrip()}\n")
    return ("Your work on this task is not done yet: the project's checks ran on your changes "
            f"and {'one fails' if len(failed) == 1 else f'{len(failed)} fail'}.\n\n"
            + "\n".join(blocks) +
            f"\nThis is fix round {round_} of {rounds}. Fix the cause in the code of this same "
            "task, in the same working copy: do not change, skip or weaken the checks or the "
            "tests they run. The checks run again when you finish.")


def summary(runs: Sequence[CheckRun], rounds: int) -> str:
    """The console's line for one round: all passed, or which failed and what comes next."""
    failed = tuple(describe(r) for r in runs if not r.passed)
    return round_line(len(runs), sum(r.seconds for r in runs), failed,
                      runs[0].round if runs else 0, rounds)


def describe(run: CheckRun) -> str:
    """A check and how it ended: `pytest -q (exit 1)`."""
    return f"{run.command} ({_ending(run)})"


def round_line(total: int, seconds: float, failed: Sequence[str], round_: int, rounds: int,
               baseline: bool = False) -> str:
    """`checks: 2/2 passed (14.2s)`, or `check failed: pytest -q (exit 1) — fix round 1/2`."""
    if not failed:
        return f"{'baseline ' if baseline else ''}checks: {total}/{total} passed ({seconds:.1f}s)"
    what = f"check{'s' if len(failed) > 1 else ''} failed: {', '.join(failed)}"
    if baseline:
        return f"baseline {what} — the run stops before any task"
    after = f"fix round {round_ + 1}/{rounds}" if round_ < rounds else "no fix rounds left"
    return f"{what} — {after}"


def as_record(run: CheckRun) -> dict[str, object]:
    """A check run as the state and --status --json keep it (its output is in its log)."""
    return {"command": run.command, "exit_code": run.exit_code, "seconds": run.seconds,
            "log": run.log, "round": run.round, "timed_out": run.timed_out}


def checks_note(commands: Sequence[str]) -> str:
    """For the task's prompt: the checks that decide whether it is done, so the agent can run
    them itself before it finishes."""
    if not commands:
        return ""
    return ("\n\nWhen you finish, agent-loop runs these checks in the repository root, and the "
            "task is done only when each exits 0:\n" + "\n".join(f"- `{c}`" for c in commands)
            + "\nRun them yourself before you finish, and fix what they find.")


def review_note(runs: Sequence[CheckRun]) -> str:
    """For the reviewer's prompt: which of the project's checks ran on the change, and how."""
    if not runs:
        return ""
    lines = "\n".join(f"- `{r.command}`: {'passed' if r.passed else 'FAILED'} ({_ending(r)}, "
                      f"{r.seconds:.1f}s)" for r in runs)
    return ("\n\nThe project's checks ran on this change after the developer's last run:\n"
            + lines + "\nJudge the change itself; passing checks do not prove it right.")


def commit_line(commands: Sequence[str]) -> str:
    """The commit message's line for a task whose checks passed."""
    return "Checks passed: " + ", ".join(commands)


def failure_text(failed: Sequence[CheckRun]) -> str:
    """The attempt's error after its last fix round: for the record and the retry advisor."""
    return "; ".join(f"check `{r.command}` still fails ({_ending(r)}): {r.tail.strip()[-1500:]}"
                     for r in failed)
