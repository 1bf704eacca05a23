"""bubblewrap (`bwrap`), the sandbox on Linux: mount namespaces without a daemon or root.

The agent sees the whole system read-only, its policy's writable folders bound over it, the
protected ones bound read-only again inside those, and hidden ones replaced by an empty folder
or /dev/null. Mounts are laid from the shallowest path to the deepest, so whatever is nested
inside another path wins over it, whichever list it came from.

Its own PID namespace (it cannot signal agent-loop or anything else of the user's), its own
session (no TIOCSTI into the user's terminal), and --die-with-parent: when the bwrap process
that agent-loop started dies, for whatever reason, the kernel kills the namespace's first
process and with it everything inside. So agent-loop's process-group stops (Ctrl+C, timeouts)
reach the whole sandbox through that one process.
"""

from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from agentloop import proc
from agentloop.errors import ProcessError, SandboxUnavailable
from agentloop.sandbox import Policy

PROGRAM = "bwrap"
PACKAGE = "bubblewrap"
BASE = ("--unshare-all", "--share-net", "--die-with-parent", "--new-session")
SYSTEM = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
          "--tmpfs", "/var/tmp")


@lru_cache(maxsize=4)
def _works(program: str) -> str | None:
    """Why `program` cannot make a sandbox here, or None when it can (asked once a process)."""
    try:  # the one door: its own session, stopped with its group on a timeout or Ctrl+C
        done = proc.run([program, *BASE, *SYSTEM, "--", "true"], check=False, timeout=30)
    except ProcessError as exc:  # missing, or stuck
        return str(exc)
    if done.returncode == 0:
        return None
    return " ".join(done.stderr.split())[:200] or f"exit {done.returncode}"


class Bubblewrap:
    """The Linux sandbox tool."""

    name = "bubblewrap"
    package = PACKAGE

    def __init__(self, program: str | None = None) -> None:
        self.program = program or shutil.which(PROGRAM) or PROGRAM

    def check(self) -> None:
        """Refuse in one line when bwrap is missing or user namespaces are off."""
        if shutil.which(self.program) is None:
            raise SandboxUnavailable(f"--sandbox needs bubblewrap: install the package "
                                     f"'{PACKAGE}' (apt-get install {PACKAGE}, dnf install "
                                     f"{PACKAGE}), or run without --sandbox")
        why = _works(self.program)
        if why is not None:
            raise SandboxUnavailable(f"--sandbox: bubblewrap cannot make a sandbox here (user "
                                     f"namespaces off?): {why}")

    def wrap(self, argv: Sequence[str], policy: Policy) -> list[str]:
        """`bwrap <mounts> --chdir <workdir> -- argv`."""
        mounts: list[tuple[int, int, list[str]]] = []
        for order, (paths, make) in enumerate(((policy.writable, _writable),
                                               (policy.protected, _read_only),
                                               (policy.hidden, _hidden))):
            mounts += [(len(p.parts), order, make(p)) for p in paths]
        mounts.sort(key=lambda m: (m[0], m[1]))
        laid = [arg for _, _, args in mounts for arg in args]
        return [self.program, *BASE, *SYSTEM, *laid, "--chdir", str(policy.workdir), "--",
                *argv]

    def traits(self) -> tuple[str, ...]:
        """What bwrap adds besides the paths."""
        return ("network on", "own PID namespace and session", "dies with agent-loop")


def _writable(path: Path) -> list[str]:
    return ["--bind", str(path), str(path)]


def _read_only(path: Path) -> list[str]:
    return ["--ro-bind", str(path), str(path)]


def _hidden(path: Path) -> list[str]:
    if path.is_dir():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]
