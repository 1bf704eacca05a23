"""scripts/install-jj.sh on a machine where cargo does not work (the test command's jj step on a
fresh machine): one clear line on what is missing, not a rustup backtrace."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def test_install_jj_without_a_working_cargo_says_what_is_missing(tmp_path: Path) -> None:
    # A cargo that fails as rustup's proxy does with no default toolchain.
    tools = tmp_path / "tools"
    tools.mkdir()
    cargo = tools / "cargo"
    cargo.write_text("#!/bin/sh\necho 'error: rustup could not choose a version of cargo'"
                     " >&2\necho 'Stack backtrace:' >&2\nexit 1\n")
    cargo.chmod(0o755)
    for name in ("date",):
        found = shutil.which(name)
        assert found
        (tools / name).symlink_to(found)
    env = {"HOME": str(tmp_path / "home"), "PATH": f"{tools}:/usr/bin:/bin",
           "AGENT_LOOP_TOOLS": str(tmp_path / "agent-loop-tools")}
    done = subprocess.run(["bash", str(CHECKOUT / "scripts" / "install-jj.sh")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Stack backtrace" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "cargo does not work here" in lines[0] and "https://rustup.rs" in lines[0]
    assert done.stdout == ""
