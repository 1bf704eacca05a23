"""A scratch file beside the one it replaces (agentloop.files.scratch), as tempfile.mkstemp
made it for the state's saves, a plan's ticks and its putting back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentloop.files.scratch import scratch


def test_a_scratch_file_is_new_its_owner_s_only_and_named_as_asked(tmp_path: Path) -> None:
    made = [scratch(tmp_path, ".state-", ".tmp") for _ in range(20)]
    for fd, path in made:
        os.write(fd, b"x")
        os.close(fd)
        name = Path(path).name
        assert Path(path).parent == tmp_path and name.startswith(".state-")
        assert name.endswith(".tmp") and len(name) > len(".state-.tmp")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len({path for _, path in made}) == 20   # never one file twice

