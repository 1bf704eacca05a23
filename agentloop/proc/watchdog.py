"""What keeps the agent from outliving agent-loop: a watchdog process, or the kernel's
parent-death signal where the watchdog cannot run."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from typing import Callable

from agentloop.proc.reaper import prctl as libc_prctl
from agentloop.proc.reaper import spawn


def die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook that makes the kernel kill the agent if agent-loop itself is SIGKILLed.

    Used only when the watchdog cannot start: a pre-exec hook forces a full fork() of our
    process, which costs a few milliseconds a run. Linux only; elsewhere None.
    """
    prctl = libc_prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def hook() -> None:
        # Resolved before fork: the child calls into libc only, no imports, no locks.
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the hook ran
            os._exit(1)
    return hook


# The watchdog's script: keep the process groups of the agents that run now; when our end of the
# pipe closes (agent-loop exited, or was killed), kill those left. dash's kill takes no `--`.
WATCHDOG = """groups=
while read -r word group; do
    case $word in
    start) groups="$groups $group" ;;
    end) left=; for g in $groups; do [ "$g" = "$group" ] || left="$left $g"; done; groups=$left ;;
    esac
done
for g in $groups; do kill -9 -"$g" 2>/dev/null; done
exit 0"""


class _Watchdog:
    """One small `sh` per agent-loop process that kills the agents' groups if we die first.

    The agent runs in a session of its own, so nothing else would stop it, or what it started
    (a test run, a build, a server), when agent-loop is SIGKILLed. The watchdog lives in its own
    session too and reads a pipe only we can write to: it hears which groups run, and when the
    pipe closes with some still running, it kills them.
    """

    def __init__(self) -> None:
        self._pipe: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def ready(self) -> bool:
        """Start the watchdog if it is not running; False when it cannot run."""
        with self._lock:
            return self._pipe is not None or self._start()

    def tell(self, word: str, group: int) -> None:
        """"start" or "end" of the agent in process group `group`."""
        with self._lock:
            for _ in range(2):  # a watchdog that died is replaced once
                if self._pipe is None and not self._start():
                    return
                assert self._pipe is not None
                try:
                    os.write(self._pipe, f"{word} {group}\n".encode())
                    return
                except OSError:
                    os.close(self._pipe)
                    self._pipe = None

    def _start(self) -> bool:
        read_end, write_end = os.pipe()  # not inheritable: no other child holds our end
        try:
            self._process = spawn(lambda: subprocess.Popen(
                ["/bin/sh", "-c", WATCHDOG], stdin=read_end, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True))
        except OSError:
            os.close(write_end)
            return False
        finally:
            os.close(read_end)
        self._pipe = write_end
        atexit.register(self.close)
        return True

    def close(self) -> None:
        """At a normal exit: let the watchdog go (no agent runs any more) and reap it."""
        with self._lock:
            if self._pipe is not None:
                os.close(self._pipe)
                self._pipe = None
            if self._process is not None:
                try:
                    self._process.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                self._process = None


watchdog = _Watchdog()
