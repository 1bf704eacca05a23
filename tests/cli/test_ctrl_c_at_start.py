"""Ctrl+C in the first instants of `agent-loop tasks.md`, real processes signalled at every
moment of their start: once our package has begun, each ends in one line, never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "agent-loop"   # the console script pip writes
# `python -v` says each module it has imported ("import 'agentloop' # ..."), as it goes: how a
# run shows that our package had begun when the signal came. Before that, Python's own start
# (its `site`, with a virtual environment's .pth files; the console script's `import re`) has a
# traceback of its own that no code of ours can prevent.
BEGAN = "import 'agentloop' # "
SAID = "agent-loop: interrupted while starting; nothing was changed"


def test_ctrl_c_at_any_moment_of_the_start_ends_in_one_line(tmp_path: Path) -> None:
    if not SCRIPT.exists():
        pytest.skip(f"no console script at {SCRIPT}: agent-loop is not installed beside Python")
    (tmp_path / "tasks.md").write_text("- first\n")
    # Both doors, one run each in turn: the console script and `python -m agentloop`.
    doors = ([str(SCRIPT)], ["-m", "agentloop"])
    began: dict[str, int] = {}
    delay, run = 0.0, 0
    # From 0 to 150 ms, a millisecond apart; further on a machine so slow that fewer than five
    # runs had our package begun by then (the start is 20-50 ms on an idle one).
    while delay <= 0.150 or (sum(began.values()) < 5 and delay < 1.0):
        door = doors[run % 2]
        child = subprocess.Popen([sys.executable, "-v", *door, "tasks.md"], cwd=tmp_path,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "NO_COLOR": "1"}, start_new_session=True)
        time.sleep(delay)
        try:
            os.killpg(child.pid, signal.SIGINT)   # as a terminal's Ctrl+C does: the group
        except ProcessLookupError:
            pass
        out, err = child.communicate(timeout=60)
        if BEGAN in err:
            # What came after (Python's -v shows a traceback of its own start that it went on
            # from, one of zipimport's: before our package, and no end of the run).
            after = err[err.index(BEGAN):]
            said = [line for line in after.splitlines() if not line.startswith(("#", "import "))]
            assert "Traceback" not in after and child.returncode != -signal.SIGINT, \
                f"{door} at {delay * 1000:.0f} ms: exit {child.returncode}\n" + "\n".join(said)
            if child.returncode == 130 and SAID in said:
                began[door[-1]] = began.get(door[-1], 0) + 1
        delay, run = delay + 0.001, run + 1
    # Each door was signalled inside the start of ours at least once (what this test is for).
    assert set(began) == {str(SCRIPT), "agentloop"}, began


def test_a_library_s_import_leaves_ctrl_c_to_python() -> None:
    # Only the program takes Ctrl+C as it starts: a test run or a script that imports agentloop
    # keeps Python's KeyboardInterrupt.
    done = subprocess.run([sys.executable, "-c", "import signal, agentloop; print("
                           "signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == "True\n", done.stdout + done.stderr


def test_another_program_run_with_dash_m_that_imports_agentloop_keeps_ctrl_c(
        tmp_path: Path) -> None:
    # `python -m mytool`, whose package imports agentloop: Python names the first argument "-m"
    # while it imports mytool, as it does for `python -m agentloop`; its Ctrl+C stays its own
    # (its KeyboardInterrupt, its cleanup), never agent-loop's start-up line and exit 130.
    (tmp_path / "mytool").mkdir()
    (tmp_path / "mytool" / "__init__.py").write_text("import agentloop  # noqa: F401\n")
    (tmp_path / "mytool" / "__main__.py").write_text(
        "import signal\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "mytool"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": path})
    assert done.stdout == "True\n", done.stdout + done.stderr
