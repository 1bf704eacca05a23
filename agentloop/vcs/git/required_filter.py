"""A filter your git requires (`filter.NAME.required`) whose program is not there: every commit
of a file your attributes send to it fails, the task's after its agent was paid. Found before
the first agent from your config and attributes; the caller asks only when the config's text
may say `required` (config_text.may_set)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.proc.program_path import which
from agentloop.vcs.git.run import Git


def check(root: Path, git_dir: Path) -> None:
    """VcsError of one line naming the setting when a filter your git requires cannot run
    and an attributes file sends files to it."""
    git = Git(root)
    try:
        out = git.out("config", "--type=bool", "--get-regexp", r"^filter\..*\.required$",
                      codes=(0, 1))
    except VcsError:
        return  # a git that cannot start or read its config is the backend's to report
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        name = key[len("filter."):-len(".required")]
        # Whether it can run first: a filter that can (the common case, git-lfs's) costs one
        # process; only one that cannot is looked for in your attributes.
        why = _cannot_run(root, git, name) if value == "true" else None
        if why is not None and _sent_to(root, git, git_dir, name):
            raise VcsError(
                f"your git requires filter \"{name}\" (filter.{name}.required) and sends files "
                f"to it (filter={name} in your attributes), but {why}: every commit or checkout "
                f"of such a file would fail, after its agent was paid; fix it, or `git config "
                f"--unset filter.{name}.required`, then run again")


def _cannot_run(root: Path, git: Git, name: str) -> str | None:
    """What keeps filter `name` from running (a command git needs unset, its program not
    found), or None (also when its command is more than a program and its words: said by git,
    not guessed). A long-running `process` stands for both clean and smudge."""
    try:
        out = git.out("config", "--get-regexp", rf"^filter\.{re.escape(name)}\.", codes=(0, 1))
    except VcsError:
        return None
    commands = {}
    for line in out.splitlines():
        key, _, text = line.partition(" ")
        commands[key.rsplit(".", 1)[-1].lower()] = text.strip()
    for command in ("process",) if commands.get("process") else ("clean", "smudge"):
        text = commands.get(command, "")
        if not text:
            return f"filter.{name}.{command} is not set"
        import shlex  # where used: only for a filter your git requires

        try:
            program = shlex.split(text)[0]
        except (ValueError, IndexError):
            continue
        if "=" in program or any(c in program for c in "$`;&|<>(){}*?"):
            continue
        # git runs a filter by the shell (`~/bin/x` is in your home), from the checkout's top
        # folder: a relative path is from there.
        program = os.path.expanduser(program)
        if which(str(root / program) if os.path.dirname(program) else program) is None:
            return f"its {command} program `{program}` is not found"
    return None


def _sent_to(root: Path, git: Git, git_dir: Path, name: str) -> bool:
    """Whether an attributes file of the repository names `filter=name` (its .gitattributes
    files, its info/attributes: files an agent writes may match), or yours does
    (core.attributesFile or its default, read for every repository) for a file the checkout
    has, committed or untracked and not ignored: a pattern of yours may match none here."""
    said = re.compile(rb"(^|\s)filter=" + re.escape(name.encode()) + rb"(\s|$)", re.MULTILINE)
    try:
        listed = git.out("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                         ":(glob)**/.gitattributes", env={"GIT_LITERAL_PATHSPECS": "0"})
        own = git.out("config", "--get", "--path", "core.attributesFile", codes=(0, 1)).strip()
    except VcsError:
        return False
    files = [root / rel for rel in listed.split("\0") if rel] + [git_dir / "info" / "attributes"]
    if any(_says(file, said) for file in files):
        return True
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", ""), ".config")
    if not _says(Path(own or os.path.join(xdg, "git", "attributes")), said):
        return False
    try:
        every = git.out("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        found = git.out("check-attr", "-z", "--stdin", "filter",
                        paths=[rel for rel in every.split("\0") if rel])
    except VcsError:
        return True  # your file names it: said before, rather than found after, an agent's pay
    return name in found.split("\0")[2::3]  # path, attribute, value: each ends in NUL


def _says(file: Path, said: re.Pattern[bytes]) -> bool:
    """Whether attributes file `file` holds `said` (False where it cannot be read)."""
    try:
        return said.search(file.read_bytes()) is not None
    except OSError:
        return False
