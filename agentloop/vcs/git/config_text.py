"""Whether a git setting may be set, read from the text of the config git reads (no process):
a word that appears nowhere cannot be set. Only a "no" is sure; "may" sends the caller to git.

Read: the environment (`git -c`, GIT_CONFIG_KEY_<n>), the system file (GIT_CONFIG_SYSTEM, else
/etc/gitconfig and the one under the prefix git is installed in; none with GIT_CONFIG_NOSYSTEM),
the global ones (GIT_CONFIG_GLOBAL, else ~/.gitconfig and $XDG_CONFIG_HOME/git/config), and,
for a repository, its own. A file with an include may set anything in a file it names: not
followed, it says "may". Each file is read once for each state of it (its stat)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from agentloop.files.stamp import Stamp, stamp
from agentloop.proc.program_path import which

# Environment variables that point git at another repository or config than the folder's own.
_ELSEWHERE = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_CONFIG")


def may_set_beyond_repository(word: bytes) -> bool:
    """Whether `word` (lower-case: a key's last part, as `userelativepaths`) may be set for git
    beyond a repository's own config: in the environment or in a file git reads for every
    repository."""
    env = os.environ
    # GIT_CONFIG_KEY_<n> counts only with GIT_CONFIG_COUNT: the environment is walked then.
    # git follows an include.path given there too (`git -c include.path=FILE`).
    if _says(env.get("GIT_CONFIG_PARAMETERS", ""), word) or (
            "GIT_CONFIG_COUNT" in env and any(
                name.startswith("GIT_CONFIG_KEY_") and _says(value, word)
                for name, value in env.items())):
        return True
    files: list[Path] = []
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() in ("", "0", "false", "no", "off"):
        if "GIT_CONFIG_SYSTEM" in env:
            files.append(Path(env["GIT_CONFIG_SYSTEM"]))
        else:
            files.append(Path("/etc/gitconfig"))
            prefix = _git_prefix(env.get("PATH", ""))
            if prefix is not None:
                files.append(prefix / "etc" / "gitconfig")
    if "GIT_CONFIG_GLOBAL" in env:
        files.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        home = env.get("HOME", "")
        xdg = env.get("XDG_CONFIG_HOME") or (home and os.path.join(home, ".config"))
        files += [Path(home, ".gitconfig")] if home else []
        files += [Path(xdg, "git", "config")] if xdg else []
    return any(_file_may_set(file, stamp(file), word) for file in files)


def may_set(root: Path, word: bytes) -> bool:
    """Whether `word` may be set for git in the repository whose checkout is `root`: in its own
    config or beyond it. "May" where its config is not the one file `root/.git/config` (a
    worktree's or a submodule's `.git` file, per-worktree config, GIT_DIR and the like)."""
    git_dir = root / ".git"
    if any(name in os.environ for name in _ELSEWHERE) or not git_dir.is_dir():
        return True
    config = git_dir / "config"
    try:
        text = config.read_bytes().lower()
    except OSError:
        return True
    # extensions.worktreeConfig: a config.worktree read after it.
    return word in text or b"[include" in text or b"worktreeconfig" in text or \
        may_set_beyond_repository(word)


def _says(config: str, word: bytes) -> bool:
    """Whether config given in the environment sets `word` or includes a file that may."""
    text = config.lower()
    return word.decode() in text or "include" in text


@functools.lru_cache(maxsize=8)
def _git_prefix(path: str) -> Path | None:
    """The prefix git is installed under, found along `path` (PATH's value): once per value."""
    program = which("git", path)
    return None if program is None else Path(program).parent.parent


@functools.lru_cache(maxsize=32)
def _file_may_set(file: Path, seen: Stamp | None, word: bytes) -> bool:
    """Whether config file `file`, as `seen` (its stat: read again once it changes), sets
    `word` or includes another file that may."""
    if seen is None:
        return False  # none there: nothing set in it
    try:
        text = file.read_bytes().lower()
    except OSError:
        return False
    return word in text or b"[include" in text
