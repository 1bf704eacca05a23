"""Running a model CLI for a test: in a process group of its own (the CLIs are Node wrappers
around native binaries, and killing the wrapper alone leaves the binary running: seen while
measuring), stopped past a timeout the way agent-loop stops an agent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, TypeVar

STOP_GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class CliRun:
    """One finished CLI run with its JSON-lines output."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def lines(self) -> list[dict[str, Any]]:
        """The output lines, parsed."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def of_type(self, type_: str, subtype: str | None = None) -> list[dict[str, Any]]:
        """The lines of one `type` (and `subtype`, when given)."""
        return [d for d in self.lines
                if d.get("type") == type_ and (subtype is None or d.get("subtype") == subtype)]


@lru_cache(maxsize=None)
def installed_version(program: Path) -> str:
    """`program --version`, once per session; a stub left by `npm ci --ignore-scripts` fails
    it."""
    try:
        done = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return f"not runnable: {exc}"
    return done.stdout.strip() if done.returncode == 0 else f"exit {done.returncode}"


Run = TypeVar("Run", bound=CliRun)


def run_cli(kind: type[Run], argv: list[str], cwd: Path, env: dict[str, str],
            stdin: str | None = None, timeout: float = 60,
            since: Callable[[], bool] | None = None) -> tuple[Run, bool]:
    """Run the CLI (never through a shell): the run, and whether it was stopped at `timeout`.
    `since`: the timeout counts from the moment it first holds (the request a test hangs
    arrived), not from the start: on a loaded machine a CLI can take longer than a short timeout
    to send its first request, and the hang under test was then never reached."""
    start = time.monotonic()
    child = subprocess.Popen(argv, cwd=cwd, env=env, text=True, start_new_session=True,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = start + timeout if since is None else None
    try:
        while True:
            if deadline is None and (since is None or since()):
                deadline = time.monotonic() + timeout
            if deadline is None and time.monotonic() - start > 60 + timeout:
                raise subprocess.TimeoutExpired(argv, timeout)  # never got that far
            left = 0.05 if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                # A retry after TimeoutExpired loses no output and writes stdin only once.
                out, err = child.communicate(stdin, timeout=left)
                timed_out = False
                break
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
    except subprocess.TimeoutExpired:
        out, err = _stop(child)
        timed_out = True
    return kind(argv, child.returncode, out, err, time.monotonic() - start), timed_out


def _stop(child: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGINT, then SIGTERM, then SIGKILL to the group, as agent-loop itself does."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            break
        try:
            return child.communicate(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            continue
    return child.communicate()
