"""File names said in a line: as git quotes them, never breaking the line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentloop.files.shown import listed, shown


def test_a_plain_name_and_one_with_spaces_or_accents_are_said_as_they_are() -> None:
    assert shown("src/app.py") == "src/app.py"
    assert shown("my notes/é ü.txt") == "my notes/é ü.txt"


def test_a_name_git_quotes_is_said_as_git_says_it(tmp_path: Path) -> None:
    names = ["a\nb.txt", "tab\there", 'q"uote', "back\\slash", "bell\a", "esc\x1b[31m"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in names:
        (tmp_path / name).write_text("x")
    by_git = subprocess.run(["git", "-c", "core.quotePath=false", "ls-files", "--others"],
                            cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert sorted(shown(n) for n in names) == sorted(by_git.splitlines())
    assert listed(["a\nb.txt", "c.txt"]) == '"a\\nb.txt", c.txt'
    assert listed([f"{n}.txt" for n in range(7)]) == "0.txt, 1.txt, 2.txt, 3.txt, 4.txt and 2 more"
