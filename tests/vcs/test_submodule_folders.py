"""agentloop.vcs.submodule_folders: which folders of a repository are its submodules."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs import submodule_folders


def test_the_paths_a_gitmodules_names(tmp_path: Path) -> None:
    (tmp_path / ".gitmodules").write_text(
        '[submodule "a"]\n\tpath = vendor/a\n\turl = ../a\n'
        '# a comment\n[Submodule "b c"]\n\tPath = "third party/b"\n'
        '[core]\n\tpath = not/one\n[submodule "up"]\n\tpath = ../outside\n'
        '[submodule "all"]\n\tpath = .\n[submodule "here"]\n\tpath = ./x\n')
    assert submodule_folders.paths(tmp_path) == ("vendor/a", "third party/b")
    assert submodule_folders.paths(tmp_path / "none") == ()
