"""Finding a program along PATH (agentloop.proc.program_path.which) as shutil.which does,
which every run's start used before (shutil loads its archivers as it loads)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentloop.proc.program_path import which


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Three folders: one with a plain file `tool`, one with a folder `tool` (with its
    executable bit), one with the program `tool`."""
    plain, folder, runs = tmp_path / "plain", tmp_path / "folder", tmp_path / "runs"
    for f in (plain, folder, runs):
        f.mkdir()
    (plain / "tool").write_text("not a program\n")
    (folder / "tool").mkdir()
    (runs / "tool").write_text("#!/bin/sh\n")
    (runs / "tool").chmod(0o755)
    return plain, folder, runs


def test_which_finds_what_shutil_which_finds(folders: tuple[Path, Path, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    plain, folder, runs = folders
    monkeypatch.chdir(runs)
    paths = [os.pathsep.join(map(str, folders)), os.pathsep.join(map(str, (plain, folder))),
             f"{plain}{os.pathsep}{os.pathsep}{runs}", "", os.pathsep, str(runs / "nowhere")]
    for path in paths:
        for name in ("tool", "./tool", str(runs / "tool"), str(plain / "tool"), "missing",
                     str(folder / "tool")):
            assert which(name, path) == shutil.which(name, path=path), (name, path)


def test_which_goes_by_the_environment_s_path_when_given_none(
        folders: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, folders)))
    assert which("tool") == str(folders[2] / "tool") == shutil.which("tool")
