"""File names said in a line: as git quotes them, never breaking the line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentloop.files.shown import listed, shown
from agentloop.vcs.git.in_the_way import restore, unmerged
from agentloop.vcs.git.run import Git
from tests.support.repos import git, make_repo


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


def test_a_name_git_left_unmerged_is_typed_so_the_command_works_in_one_line(
        tmp_path: Path) -> None:
    """The stop's `git restore` of files a `git stash pop` left unmerged: a name with a newline
    goes in bash's $'...' (the line stays one), a name with a space or a quote quoted; pasted
    as printed, it ends the conflict and takes the markers out, and restores no other file (a
    glob pathspec's `?` took your `a_b.txt` too)."""
    names = ["a\nb.txt", "it's here.txt", "plain.txt"]
    work = make_repo(tmp_path / "work", "git", {n: "base\n" for n in [*names, "a_b.txt"]})
    (work / "a_b.txt").write_text("yours\n")
    for n in names:
        (work / n).write_text("mine\n")
    git(work, "stash", "-q")
    for n in names:
        (work / n).write_text("lane\n")
    git(work, "commit", "-qam", "lane")
    subprocess.run(["git", "stash", "pop"], cwd=work, capture_output=True)
    files = unmerged(Git(work))
    assert sorted(files) == sorted(names)
    command = restore(work, files)
    assert "\n" not in command and "$'a\\nb.txt'" in command, command
    subprocess.run(["bash", "-c", command], cwd=work, check=True, capture_output=True)
    assert not unmerged(Git(work))
    assert all((work / n).read_text() == "lane\n" for n in names)
    assert (work / "a_b.txt").read_text() == "yours\n"
