"""The history a run builds on, with every description: the current branch (git, `HEAD`) or the
ancestors of the working copy (jj, `::@`), oldest first, read by one command that changes
nothing. What the tasks' trailers say is read from it (agentloop.state.landed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentloop.errors import VcsError
from agentloop.vcs.git.run import Git

if TYPE_CHECKING:
    from collections.abc import Callable

FIELD, END = "\x00", "\x01"   # between the fields of a log entry, after each entry
# Every description that can name a task holds it (its subject, its trailers, a revert's quote
# of either): the rest of a long history is never read.
MARK = "agent-loop"
# A revert names the commit it undoes, not always agent-loop: `git revert` of a squash merge
# whose subject is the pull request's title.
REVERTS = ("This reverts commit", "This backs out commit")
TIMEOUT = 120   # seconds: a history that takes longer to read is read as none
BATCH = 1000    # commits a jj_changes command asks of: a revset of some 54 KiB (77 for SHA-256)


def branch_history(kind: str, root: Path, rev: str = "HEAD") -> list[tuple[str, str, str]]:
    """(commit id, change id, description) of every commit whose description mentions
    agent-loop, oldest first; git's change id is its commit id. Empty when there is no history
    (an unborn branch) or it cannot be read; VcsError when git's repository lacks the commit
    `rev` names, or jj's git store an object of the history (a damaged repository, said so:
    agentloop.vcs.git.pruned; jj's, by agentloop.vcs.jj.run.damage). `rev`: git's commit to
    read back from."""
    if kind == "git":
        return git_history(root, rev)()
    try:
        if kind == "jj":
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
        from agentloop.vcs.jj.run import damage  # only once jj failed

        said = damage(done.stderr)
        if said is not None:
            raise said
        return []
    return [(commit, change, text) for commit, change, text in entries(done.stdout, 3)]


def git_history(root: Path, rev: str = "HEAD") -> Callable[[], list[tuple[str, str, str]]]:
    """branch_history's read of git's history, its command started now to run beside what the
    caller does meanwhile (no thread: a thread's start waits for the interpreter, which the
    new thread holds while it starts git), and the function that waits for it and answers as
    branch_history does (it must be called: it reaps git). A read stopped before it was
    waited for (agentloop.proc.cut_reads) answers none."""
    try:
        wait = Git(root).begin("log", "--reverse", "--regexp-ignore-case", f"--grep={MARK}",
                               *(f"--grep={r}" for r in REVERTS),
                               "--format=%H%x00%H%x00%B%x01", rev, codes=None,
                               timeout=TIMEOUT)
    except VcsError:
        return lambda: []

    def read() -> list[tuple[str, str, str]]:
        try:
            done = wait()
        except VcsError:
            return []
        if done.returncode < 0:   # killed: the history was not read, nor found damaged
            return []
        if done.returncode != 0:
            _refuse_damaged(root, rev)
            return []
        return [(commit, change, text) for commit, change, text in entries(done.stdout, 3)]
    return read


def jj_changes(root: Path, commits: list[str]) -> dict[str, str | None]:
    """{commit id: jj's change id} for the git `commits` jj's repository at `root` holds (it
    made them its own when it was made from git's, one since rewritten or abandoned too), read
    by one command that changes nothing (one per thousand commits); None for a commit it does
    not hold (one on no branch when jj took git's in: it never will, unless a branch comes to
    name it). A commit jj could not answer for is left out."""
    from agentloop.vcs.jj.run import Jj  # jj's runner only for jj, as above

    found: dict[str, str | None] = {}
    # One command for up to BATCH commits: a revset of every one of thousands of tasks would
    # be more than Linux takes in one argument (128 KiB), and jj would not start at all.
    for first in range(0, len(commits), BATCH):
        revset = " | ".join(f"commit_id({c})" for c in commits[first:first + BATCH])
        try:
            done = Jj(root).run("--ignore-working-copy", "log", "--no-graph", "-r", revset,
                                "-T", 'commit_id ++ "\\x00" ++ change_id ++ "\\x01"',
                                codes=None, timeout=TIMEOUT)
        except VcsError:
            return found
        if done.returncode != 0:
            return found
        held = {commit: change for commit, change in entries(done.stdout, 2)}
        found.update((c, held.get(c)) for c in commits[first:first + BATCH])
    return found


def _refuse_damaged(root: Path, rev: str) -> None:
    """git could not read the history of `rev` (HEAD, or a branch): when the commit it names
    is missing, the repository is damaged and that is said, not shown as no history."""
    from agentloop.vcs.git import pruned  # only once git failed
    from agentloop.vcs.history import where

    branch = None if rev == "HEAD" else rev
    try:
        said = pruned.checkout_damaged(Git(root), branch, where("git", root, branch))
    except VcsError:
        return
    if said is not None:
        raise said


def entries(out: str, count: int) -> list[list[str]]:
    """The entries of a log printed with FIELD between an entry's fields and END after it (git:
    `%x00`, `%x01`), each with its `count` fields; anything else is no entry."""
    found = []
    for entry in out.split(END):
        parts = entry.lstrip("\n").split(FIELD)
        if len(parts) == count and parts[0]:
            found.append(parts)
    return found
