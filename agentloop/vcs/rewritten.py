"""A finished task's commit gone from the history may be there again, rewritten by the user (an
amend, a rebase): the same commit under another id. Told apart from a commit that only looks
like it: the same agent-loop trailers, compared value for value (not as a search matches them:
`Agent-Loop-Plan: tasks` is in `Agent-Loop-Plan: tasks-v2`), and the same author and author
time, which an amend and a rebase keep and a redo of the task (`--again`) does not."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Collection, Iterable

from agentloop.errors import VcsError
from agentloop.vcs.branch_log import entries
from agentloop.vcs.git.run import Git
from agentloop.vcs.trailers import PLAN_KEY, TASK_KEY

KEYS = (PLAN_KEY.casefold(), TASK_KEY.casefold())
# Compiled by `re` when first asked for: a run whose agents rewrote no history never does.
_TASK_LINE = rf"^{re.escape(TASK_KEY)}: [0-9]+(?: [0-9a-f]+)?$"
# Who made a commit and when, then its description, as each VCS writes them.
_GIT_FORMAT = "--format=%H%x00%H%x00%an <%ae>%x00%ad%x00%B%x01"
_JJ_TEMPLATE = ('commit_id ++ "\\x00" ++ change_id ++ "\\x00" ++ author.name() ++ " <" ++ '
                'author.email() ++ ">\\x00" ++ author.timestamp() ++ "\\x00" ++ description '
                '++ "\\x01"')

Key = tuple[str, str, tuple[str, ...]]   # (author, author time, the trailer lines)


def rewritten(kind: str, root: Path, lost: Iterable[str], rev: str = "HEAD",
              skip: Collection[str] = ()) -> dict[str, tuple[str, str]]:
    """Each of the `lost` commits (ids the VCS still knows, gone from the history) that the
    history read back from `rev` (git; jj reads `::@`) holds again rewritten: {lost commit:
    (the change id there, its commit id)}. `skip`: ids never taken (a task's earlier attempts)."""
    wanted = list(dict.fromkeys(lost))
    if kind not in ("git", "jj") or not wanted:
        return {}
    try:
        keys = {c: key for c, _, key in _read(kind, root, wanted, None)}
        lines = sorted({line for _, _, trailers in keys.values() for line in trailers
                        if re.match(_TASK_LINE, line)})
        if not lines:
            return {}  # no task trailers: nothing can be it again
        there: dict[Key, tuple[str, str]] = {}
        for commit, change, key in _read(kind, root, lines, rev):
            if commit not in skip and change not in skip:
                there.setdefault(key, (change, commit))
    except VcsError:
        return {}   # a commit the VCS no longer knows: nothing to compare, it is lost
    return {c: there[key] for c, key in keys.items() if key in there}


def _read(kind: str, root: Path, what: list[str], rev: str | None
          ) -> list[tuple[str, str, Key]]:
    """(commit, change, its Key) of the commits `what` (rev None), or of the history of `rev`
    whose description holds one of the lines `what`."""
    if kind == "git":
        args = ["--no-walk=unsorted", *what] if rev is None else \
            ["--fixed-strings", *(f"--grep={line}" for line in what), rev]
        out = Git(root).out("log", "--date=raw", _GIT_FORMAT, *args)
    else:
        from agentloop.vcs.jj.run import Jj  # jj's runner only for jj: git runs skip it

        revset = " | ".join(what) if rev is None else "::@ & (" + " | ".join(
            f'description(glob:"*{line}*")' for line in what) + ")"
        out = Jj(root).out("--ignore-working-copy", "log", "--no-graph", "-r", revset,
                           "-T", _JJ_TEMPLATE)
    found = []
    for commit, change, author, when, text in entries(out, 5):
        trailers = tuple(sorted(line.strip() for line in text.splitlines()
                                if line.split(":", 1)[0].strip().casefold() in KEYS))
        found.append((commit, change, (author, when, trailers)))
    return found


def carried(git: Git, commit: str, rev: str) -> bool:
    """Whether every file git `commit` changed is at `rev` exactly as the commit left it (or
    gone from both): its change is there, whatever became of the commit (your squash, or an
    amend that dropped its trailers), so nothing of it is lost."""
    try:
        paths = [p for p in git.out("diff-tree", "--no-commit-id", "-r", "-z", "--name-only",
                                    "--no-renames", "--root", commit).split("\0") if p]
        if not paths:
            return False
        return _blobs(git, commit, paths) == _blobs(git, rev, paths)
    except VcsError:
        return False


def _blobs(git: Git, rev: str, paths: list[str]) -> dict[str, str]:
    """{path: its blob id at `rev`} for those of `paths` that are there."""
    found = {}
    for entry in git.out("ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths).split("\0"):
        meta, _, path = entry.partition("\t")
        if path:
            found[path] = meta.split()[2]
    return found
