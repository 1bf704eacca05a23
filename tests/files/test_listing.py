"""agentloop.files.listing finds what a pathlib glob of one `*` finds."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.files.listing import folders, names


def _made(tmp_path: Path) -> Path:
    base = tmp_path / "plans"
    (base / "one").mkdir(parents=True)
    (base / ".hidden").mkdir()
    (base / "file.txt").write_text("x")
    (base / ".state-1.tmp").write_text("x")
    os.symlink(base / "one", base / "link")
    os.symlink(tmp_path / "nowhere", base / "broken")
    return base


def test_names_are_a_glob_s_of_every_entry(tmp_path: Path) -> None:
    base = _made(tmp_path)
    assert sorted(names(base)) == sorted(p.name for p in base.glob("*"))
    assert [n for n in names(base) if n.startswith(".state-") and n.endswith(".tmp")] == \
        [p.name for p in base.glob(".state-*.tmp")]


def test_folders_are_a_glob_s_folders_links_to_folders_too(tmp_path: Path) -> None:
    base = _made(tmp_path)
    assert sorted(folders(base)) == sorted(p for p in base.glob("*") if p.is_dir())
    assert sorted(f.name for f in folders(base)) == [".hidden", "link", "one"]


def test_no_folder_has_no_entries(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "missing", tmp_path / "file"):
        assert names(path) == [] == list(path.glob("*"))
        assert folders(path) == []
