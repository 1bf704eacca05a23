"""File names said in a line: as git quotes them, never breaking the line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentloop.files.names import said, said_all


def test_a_plain_name_and_one_with_spaces_or_accents_are_said_as_they_are() -> None:
    assert said("src/app.py") == "src/app.py"
    assert said("my notes/é ü.txt") == "my notes/é ü.txt"


def test_a_name_git_quotes_is_said_as_git_says_it(tmp_path: Path) -> None:
    names = ["a\nb.txt", "tab\there", 'q"uote', "back\\slash", "bell\a", "esc\x1b[31m"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in names:
        (tmp_path / name).write_text("x")
    listed = subprocess.run(["git", "-c", "core.quotePath=false", "ls-files", "--others"],
                            cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert sorted(said(n) for n in names) == sorted(listed.splitlines())
    assert said_all(["a\nb.txt", "c.txt"]) == '"a\\nb.txt", c.txt'
