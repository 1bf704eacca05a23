"""state_of streams: the hash matches git's, and a big file does not raise peak memory."""

import resource
import subprocess
from pathlib import Path

from git import Repo

from agentloop.vcs.git import files as gitfiles


def test_hash_matches_git_and_store_keeps_the_blob(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path)
    (tmp_path / "big.bin").write_bytes(b"x\0y" * 1_000_000)
    want = subprocess.run(["git", "hash-object", "big.bin"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert gitfiles.state_of(tmp_path, "big.bin") == f"100644:{want}"
    assert gitfiles.state_of(tmp_path, "big.bin", repo.odb) == f"100644:{want}"
    got = subprocess.run(["git", "cat-file", "-s", want], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert got == "3000000"


def test_hashing_a_200mb_file_keeps_memory_flat(tmp_path: Path) -> None:
    with open(tmp_path / "huge.bin", "wb") as f:
        f.truncate(200 * 1024 * 1024)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gitfiles.state_of(tmp_path, "huge.bin")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert (after - before) < 80 * 1024  # KiB on Linux
