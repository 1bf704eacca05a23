"""vcs.own_output through a pipe: the files of the sibling that READS the pipe (`| tee run.log`)
are this run's output; a sibling that only writes to the same pipe (a daemon sharing the shell's
stdout) is not, and its files stay the user's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/fdinfo").exists(), reason="Linux /proc")

PROBE = """
import sys, time
from pathlib import Path
from agentloop.vcs import own_output
root = Path(sys.argv[1])
for _ in range(500):
    if (root / "ready").exists():
        break
    time.sleep(0.01)
print(sorted(own_output(root)), flush=True)
(root / "done").touch()
"""

DAEMON = """
import sys, time
from pathlib import Path
root = Path(sys.argv[1])
with open(root / "daemon.log", "w"):
    (root / "ready").touch()
    for _ in range(500):  # held open until the probe has looked
        if (root / "done").exists():
            break
        time.sleep(0.01)
"""


def _shell(script: str, tmp_path: Path) -> str:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "daemon.py").write_text(DAEMON)
    subprocess.run(["sh", "-c", script, "sh", sys.executable, str(tmp_path), str(root)],
                   check=True, timeout=30, cwd=Path(__file__).parents[2])
    return (tmp_path / "out.txt").read_text()


def test_the_reader_of_the_pipe_makes_its_file_ours(tmp_path: Path) -> None:
    script = ('touch "$3/ready"; "$1" "$2/probe.py" "$3" | tee "$3/run.log" > "$2/out.txt"')
    assert "run.log" in _shell(script, tmp_path)


def test_a_sibling_writing_to_the_same_pipe_does_not(tmp_path: Path) -> None:
    script = ('{ "$1" "$2/daemon.py" "$3" & "$1" "$2/probe.py" "$3"; wait; } '
              '| cat > "$2/out.txt"')
    assert _shell(script, tmp_path).strip() == "[]"
