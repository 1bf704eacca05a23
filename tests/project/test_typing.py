"""The package stays typed: mypy with --disallow-untyped-defs (set in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_mypy_is_clean() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "agentloop"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
