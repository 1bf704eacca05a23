"""The history a run builds on, with every description: the current branch (git, `HEAD`) or the
ancestors of the working copy (jj, `::@`), oldest first, read by one command that changes
nothing. What the tasks' trailers say is read from it (agentloop.state.landed)."""

from __future__ import annotations

from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.git.run import Git

_FIELD, _END = "\x00", "\x01"
# Every description that can name a task holds it (its subject, its trailers, a revert's quote
# of either): the rest of a long history is never read.
MARK = "agent-loop"
# A revert names the commit it undoes, not always agent-loop: `git revert` of a squash merge
# whose subject is the pull request's title.
REVERTS = ("This reverts commit", "This backs out commit")
TIMEOUT = 120   # seconds: a history that takes longer to read is read as none


def branch_history(kind: str, root: Path, rev: str = "HEAD") -> list[tuple[str, str, str]]:
    """(commit id, change id, description) of every commit whose description mentions
    agent-loop, oldest first; git's change id is its commit id. Empty when there is no history
    (an unborn branch) or it cannot be read. `rev`: git's commit to read back from."""
    try:
        if kind == "git":
            done = Git(root).run("log", "--reverse", "--regexp-ignore-case", f"--grep={MARK}",
                                 *(f"--grep={r}" for r in REVERTS),
                                 "--format=%H%x00%H%x00%B%x01", rev, codes=None,
                                 timeout=TIMEOUT)
        elif kind == "jj":
            from agentloop.vcs.jj.run import Jj  # jj's runner only for jj: git runs skip it

            done = Jj(root).run(
                "--ignore-working-copy", "log", "--no-graph", "--reversed", "-r",
                "::@ & (" + " | ".join(f'description(glob-i:"*{m}*")' for m in (MARK, *REVERTS))
                + ")", "-T",
                'commit_id ++ "\\x00" ++ change_id ++ "\\x00" ++ description ++ "\\x01"',
                codes=None, timeout=TIMEOUT)
        else:
            return []
    except VcsError:
        return []
    if done.returncode != 0:
        return []
    found = []
    for entry in done.stdout.split(_END):
        parts = entry.lstrip("\n").split(_FIELD)
        if len(parts) == 3 and parts[0]:
            found.append((parts[0], parts[1], parts[2]))
    return found
