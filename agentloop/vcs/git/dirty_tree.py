"""The user's uncommitted files a git run finds where its agent is to work, and what it does
with them: a folder just put under git commits them as its first commit (reverting a task never
deletes a file that was there before); a run whose agents work in lanes leaves them alone; a run
whose agent works in this checkout refuses them, where a task's commit could take them, unless
`--allow-dirty` lets them be."""

from __future__ import annotations

from pathlib import Path

from agentloop.errors import VcsError
from agentloop.files.names import said
from agentloop.vcs.git.repo import GitRepo
from agentloop.vcs.git.run import EMPTY_TREE

# Lines the tool itself adds to .gitignore; a .gitignore changed only by them is not "dirty".
OWN_IGNORE_LINES = {".agent-loop", ".agent-loop/", "/.agent-loop", "/.agent-loop/"}


def dirty(tree: GitRepo, head: str | None) -> list[str]:
    """The paths that make the tree dirty (not a .gitignore with only our lines added)."""
    return sorted(p for p in tree.candidates(head)
                  if not (p == ".gitignore" and _only_own_ignore_lines(tree, head)))


def _only_own_ignore_lines(tree: GitRepo, head: str | None) -> bool:
    def strip(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() not in OWN_IGNORE_LINES]
    try:
        now = (tree.root / ".gitignore").read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return False
    try:
        assert head is not None
        before = (tree.repo.commit(head).tree / ".gitignore").data_stream.read().decode()
    except (AssertionError, KeyError, UnicodeDecodeError):
        before = ""
    return strip(now) == strip(before)


def settle(tree: GitRepo, found: list[str], head: str | None, created: bool, lanes: bool,
           allow_dirty: bool) -> list[str]:
    """Deal with the `found` uncommitted paths as the run may (`created`: the repository was
    just made; `lanes`: a lane is wanted); the lines that say what was done. VcsError when the
    run refuses them."""
    if created and head is None and found:
        # A folder we just put under git: its files become the base, so reverting a task
        # never deletes a file that was there before agent-loop came.
        message = "Files present before agent-loop's first task"
        sha = tree.commit(None, set(found), message)
        if sha is not None:
            tree.land(None, sha, message)
        tree.reset_index(sha or EMPTY_TREE, set(found))
        return [f"committed the {len(found)} files already there as the starting point"]
    if found and beside_lanes(tree, head, lanes):
        return [left_alone(found)]
    if found and not allow_dirty:
        raise VcsError(dirty_message(tree.root, found, why_here(head, lanes)))
    if found:
        # The limit of allow_dirty: a dirty file the task edits further is committed whole,
        # the user's edit with it (an untracked one as a new file, which a revert deletes).
        return [f"{len(found)} uncommitted file(s) stay out of task commits unless a task "
                "edits them"]
    return []


def beside_lanes(tree: GitRepo, head: str | None, lanes: bool) -> bool:
    """Whether the run's agents work in lanes, away from this checkout: a lane is wanted,
    and there is a commit to start one from and a branch to land on (as
    agentloop.run.workplace decides once the run starts)."""
    return lanes and head is not None and tree.ref() is not None


def why_here(head: str | None, lanes: bool) -> str:
    """Why the agent works in this checkout, where a lane was wanted but cannot be."""
    if not lanes:
        return ""
    if head is None:
        return " this time (the repository has no commit yet for a lane to start from)"
    return " this time (HEAD is on no branch, so a lane would have none to land on)"


def dirty_message(root: Path, found: list[str], why: str = "") -> str:
    """A run's refusal of a dirty tree where the agent works in it (`why`: said after "the
    agent works in this checkout")."""
    return (f"{len(found)} uncommitted file(s) in {root} (e.g. {said(found[0])}): the agent "
            f"works in this checkout{why}, where a task's commit could take them; commit or "
            "stash them, or pass --allow-dirty to leave them out of task commits")


def left_alone(found: list[str]) -> str:
    """The one line a run in lanes says of the user's uncommitted files."""
    return (f"your {len(found)} uncommitted file(s) (e.g. {said(found[0])}) are left alone: the "
            "agent works from your last commit in a lane of its own, and a task that changes "
            "one of them waits to land until you commit or stash it")
