"""The repository most tests of the VCS side land on; a test file that needs another kind (jj,
a colocated one) defines its own `repo`, which wins in that file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.repos import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose branch main holds one commit, "base", with f.txt."""
    return make_repo(tmp_path / "repo", "git", {"f.txt": "one\n"}, message="base")
