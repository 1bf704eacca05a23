"""agent-loop on a real pseudo-terminal, read off the screen a person would see (pyte), with
Ctrl+C pressed once what the test waits for shows."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pyte


@dataclass(frozen=True)
class Seen:
    """What a run on the terminal showed."""

    first: str   # the screen when what was waited for first showed ("" if it never did)
    # each screen after the first Ctrl+C, with the seconds since it
    screens: list[tuple[float, str]]
    last: str    # the screen at the end
    code: int    # the exit code


def on_a_terminal(argv: list[str], cwd: Path, seen: str, times: int = 1, stops: int = 0,
                  timeout: float = 90) -> Seen:
    """Run `argv` in `cwd` on a pseudo-terminal of 100x30, in colour (no NO_COLOR, no CI), until
    it ends (or `timeout` seconds); once `seen` shows on the screen (`times` times), press
    Ctrl+C `stops` times, half a second apart (SIGINT to the process group, as a terminal does
    to its foreground job)."""
    screen = pyte.Screen(100, 30)
    stream = pyte.ByteStream(screen)
    main, child_end = pty.openpty()
    os.set_blocking(main, False)
    env = {**os.environ, "COLUMNS": "100", "LINES": "30", "TERM": "xterm-256color"}
    env.pop("CI", None)
    env.pop("NO_COLOR", None)
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdin=child_end, stdout=child_end,
                             stderr=child_end, start_new_session=True)
    os.close(child_end)
    first, screens = "", []
    pressed: list[float] = []
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([main], [], [], 0.1)
            try:
                data = os.read(main, 65536) if ready else b""
            except OSError:  # the child's end closed
                data = b""
            stream.feed(data)
            shown = "\n".join(line.rstrip() for line in screen.display)
            now = time.monotonic()
            showing = shown.count(seen) >= times
            first = first or (shown if showing else "")
            if len(pressed) < stops and showing and (not pressed or now - pressed[-1] > 0.5):
                os.killpg(child.pid, signal.SIGINT)
                pressed.append(now)
            elif pressed:
                screens.append((now - pressed[0], shown))
            if child.poll() is not None and not data:
                break
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        os.close(main)
    last = "\n".join(line.rstrip() for line in screen.display).rstrip()
    assert first, f"{seen!r} never showed {times} time(s); the screen at the end:\n{last}"
    return Seen(first, screens, last, child.returncode)
