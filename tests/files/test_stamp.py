"""A file's status for its stamp, or None when there is none (agentloop.files.stamp)."""

from __future__ import annotations

from pathlib import Path

from agentloop.files.stamp import stat_or_none


def test_a_file_has_its_status_and_a_missing_one_none(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("abc")
    found = stat_or_none(tmp_path / "a")
    assert found is not None and found.st_size == 3
    assert stat_or_none(tmp_path / "gone") is None
    assert stat_or_none(tmp_path / "a" / "under-a-file") is None  # NotADirectoryError


def test_a_link_is_its_own_file_when_not_followed(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("abc")
    (tmp_path / "link").symlink_to("target")
    (tmp_path / "dangling").symlink_to("nowhere")
    followed, own = stat_or_none(tmp_path / "link"), stat_or_none(tmp_path / "link", False)
    assert followed is not None and own is not None and followed.st_ino != own.st_ino
    assert stat_or_none(tmp_path / "dangling") is None
    assert stat_or_none(tmp_path / "dangling", follow_symlinks=False) is not None
