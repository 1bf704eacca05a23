"""A run of agent-loop as Python's audit hooks see it: a line for each module's first import, each
process started and (Thread.start wrapped) each thread started, in the order they come."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# `python -c WATCH SEEN VCS WHERE [ARG...]`: `agent-loop tasks.md --vcs VCS --no-distill [ARG...]`,
# its lines appended to the file SEEN; with WHERE `where`, each import's line ends with whether
# the main thread made it (True or False).
WATCH = """
import runpy, sys, threading
out = open(sys.argv[1], 'a', buffering=1)
vcs, where, extra = sys.argv[2], sys.argv[3] == 'where', sys.argv[4:]
def hook(event, args):
    if event == 'import':
        made = f' {threading.current_thread() is threading.main_thread()}' if where else ''
        out.write(f'import {args[0]}{made}\\n')
    elif event in ('subprocess.Popen', 'os.posix_spawn'):
        out.write(f'process {" ".join(map(str, args[1]))}\\n')
sys.addaudithook(hook)
begin = threading.Thread.start
ahead = []
def start(self):
    out.write(f'thread {self.name}\\n')
    if self.name == 'agent-loop records ahead':
        ahead.append(self)
    begin(self)
threading.Thread.start = start
# Nothing in a run waits for the records-ahead thread (agentloop.run.ahead): what it has not
# made or loaded yet when needed, the thread that needs it makes. A loaded machine runs it late,
# so the first agent's first line waits here (30 s at most) until it has ended; what it does not
# load the main thread still loads, and says so. proc.stream is wrapped once the run imported it
# (at its next import), so that this harness imports nothing of its own.
def held(proc, stream):
    def first(argv, on_line, *args, **kwargs):
        proc.stream = stream
        def line(data, seen=[]):
            if not seen:
                seen.append(True)
                for _ in range(3000):
                    if not any(t.is_alive() for t in ahead):
                        break
                    threading.Event().wait(0.01)
            on_line(data)
        return stream(argv, line, *args, **kwargs)
    return first
wrapped = []
def wrap(event, args):
    if event != 'import' or wrapped:
        return
    proc = sys.modules.get('agentloop.proc')
    if proc is not None and hasattr(proc, 'stream'):
        wrapped.append(True)
        proc.stream = held(proc, proc.stream)
sys.addaudithook(wrap)
sys.argv = ['agent-loop', 'tasks.md', '--vcs', vcs, '--no-distill', *extra]
runpy.run_module('agentloop', run_name='__main__')
"""


def watched(seen: Path, vcs: str = "git", where: bool = False,
            extra: list[str] | None = None) -> list[str]:
    """The command line of a run of tasks.md (with `--vcs VCS` and `extra`) whose lines go to
    `seen`."""
    return [sys.executable, "-c", WATCH, str(seen), vcs, "where" if where else "-",
            *(extra or [])]


def audited_run(work: Path, tmp_path: Path, vcs: str = "git", where: bool = False,
                extra: list[str] | None = None) -> list[str]:
    """The lines of a fresh run of `work`'s tasks.md, run to its end (exit 0); no terminal and
    no input, so a `--reset` never stops to ask."""
    seen = tmp_path / "seen.txt"
    done = subprocess.run(watched(seen, vcs, where, extra), cwd=work, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    return seen.read_text().splitlines()
