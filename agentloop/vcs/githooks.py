"""The repository's own git hooks, run on a task's change as git would run them on a commit.

agent-loop's own git commands skip the hooks (`core.hooksPath=/dev/null` on each, and
`--no-verify`: a hook that waits for input or edits the tree would break the one-commit-per-task
bookkeeping; agentloop.vcs.git.run.GUARD). With the
`git-hooks` setting the run core runs `pre-commit` and `commit-msg` itself, as checks, before the
commit: a hook that fails is a failed check the task's session is asked to fix. What git gives a
hook is given here too: the worktree's root as the cwd, an index holding the change
(GIT_INDEX_FILE), and the message's file as commit-msg's argument.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from agentloop.ondemand import dataclass
from agentloop.vcs.git.run import Git

HOOKS = ("pre-commit", "commit-msg")   # the hooks that judge a commit before it is made
# The others git runs on a commit: they judge nothing, so no setting runs them (a notifier run
# on every task's commit, or a message rewritten under the run), and the run says so.
UNRUN = ("prepare-commit-msg", "post-commit")
INDEX = "agent-loop-hooks.index"       # in the git dir: the change as the hooks see it
MESSAGE = "AGENT_LOOP_COMMIT_MSG"      # in the git dir: the message commit-msg reads


@dataclass(frozen=True)
class Hook:
    """One hook of the repository, as a check's command line and what it needs."""

    name: str
    path: Path        # the executable, where git would look (core.hooksPath honoured)
    command: str      # the shell line that runs it, as the check's log and messages show it


# What hooks() asks git, and what a `git rev-parse` that locates the repository asks along with
# it (agentloop.vcs.git.repo.locate): the answer is kept for the run's first hooks() a moment later.
HOOK_PATHS = tuple(arg for name in (*(f"hooks/{h}" for h in (*HOOKS, *UNRUN)), MESSAGE)
                   for arg in ("--git-path", name))
FOUND_SECONDS = 2.0   # how long such an answer stands in for asking again
_found: dict[Path, tuple[float, list[Path]]] = {}


def found_with(root: Path, lines: list[str]) -> None:
    """Keep where the hooks are, as `git rev-parse ... *HOOK_PATHS` run in `root` said."""
    _found[root] = (time.monotonic(), _resolved(root, lines))


def _resolved(root: Path, lines: list[str]) -> list[Path]:
    return [(root / line) if not os.path.isabs(line) else Path(line) for line in lines]


def _git_paths(root: Path, *names: str) -> list[Path]:
    """Where git keeps each of `names` in its folder, asked in one process."""
    argv = [arg for name in names for arg in ("--git-path", name)]
    # As configured: the door's own hooks path (none) is not where git looks for yours.
    return _resolved(root, Git(root).out("rev-parse", *argv, as_configured=True).splitlines())


def _git_path(root: Path, name: str) -> Path:
    return _git_paths(root, name)[0]


def hooks(root: Path) -> tuple[Hook, ...]:
    """The repository's pre-commit and commit-msg hooks that git would run (executable files
    in its hooks folder); none when it has none."""
    return present(root)[0]


def present(root: Path) -> tuple[tuple[Hook, ...], tuple[str, ...]]:
    """hooks(), and the names of the UNRUN hooks git would run on a commit, in one look."""
    found = []
    kept = _found.pop(root, None)  # once, and only just now: core.hooksPath may change
    if kept is not None and time.monotonic() - kept[0] <= FOUND_SECONDS:
        *paths, message = kept[1]
    else:
        *paths, message = _git_paths(root, *(f"hooks/{name}" for name in (*HOOKS, *UNRUN)),
                                     MESSAGE)
    unrun = tuple(name for name, path in zip(UNRUN, paths[len(HOOKS):])
                  if path.is_file() and os.access(path, os.X_OK))
    for name, path in zip(HOOKS, paths):
        if path.is_file() and os.access(path, os.X_OK):
            import shlex  # a repository with hooks only

            shown = os.path.relpath(path, root) if path.is_relative_to(root) else str(path)
            args = f" {shlex.quote(os.path.relpath(message, root))}" \
                if name == "commit-msg" else ""
            found.append(Hook(name, path, shlex.quote(shown) + args))
    return tuple(found), unrun


def on_commit(root: Path) -> tuple[str, ...]:
    """The names of the hooks git would run on a commit in `root` (HOOKS, then UNRUN): read
    off `.git/hooks` where no core.hooksPath may be set (no process: a colocated jj run asks
    on every start), else as present() finds them."""
    from agentloop.vcs.git.config_text import may_set  # a colocated jj run's only

    if may_set(root, b"hookspath"):
        found, unrun = present(root)
        return (*(h.name for h in found), *unrun)
    folder = root / ".git" / "hooks"
    return tuple(name for name in (*HOOKS, *UNRUN)
                 if (folder / name).is_file() and os.access(folder / name, os.X_OK))


@contextmanager
def staged(root: Path, message: str) -> Iterator[dict[str, str]]:
    """The environment a hook runs in while the block lasts: an index of its own holding the
    working tree's changes (the user's index untouched), and the message's file written."""
    index, note = _git_path(root, INDEX), _git_path(root, MESSAGE)
    real = _git_path(root, "index")
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    try:
        if real.exists():
            import shutil  # where used: off every run's way to its first agent

            shutil.copyfile(real, index)
        Git(root).run("add", "--all", "--", ".", env={"GIT_INDEX_FILE": str(index)})
        note.write_text(message, encoding="utf-8")
        yield env
    finally:
        for path in (index, note):
            path.unlink(missing_ok=True)
