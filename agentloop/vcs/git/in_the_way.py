"""git: your own edits in the way of a landing, and what lets it go on.

A landing moves the branch only when nothing of yours (edited, staged or untracked) sits on a path
its commit changes: moving it would leave the checkout showing the task's change reversed. These
say which of the commit's paths hold something of yours, and what to do about them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agentloop.files.shown import listed, typed
from agentloop.vcs.git.run import Git

# Files git keeps while a command of several steps is under way, and the command that ends it.
# `git am` keeps its session in rebase-apply too, marked by `applying`, and refuses a `git
# rebase --abort` there ("It looks like 'git am' is in progress"): looked for first.
IN_PROGRESS = (("MERGE_HEAD", "a merge", "merge"), ("rebase-merge", "a rebase", "rebase"),
               ("rebase-apply/applying", "an am session", "am"),
               ("rebase-apply", "a rebase", "rebase"), ("CHERRY_PICK_HEAD", "a cherry-pick",
                                                        "cherry-pick"),
               ("REVERT_HEAD", "a revert", "revert"))


def in_progress(git_dir: Path) -> tuple[str, str] | None:
    """A command of several steps under way in the checkout whose git dir is `git_dir` (your
    `git merge` stopped on a conflict, say): what it is and the git command that ends it."""
    for name, what, command in IN_PROGRESS:
        if (git_dir / name).exists():
            return what, command
    return None


def finish(command: str) -> str:
    """How to end a command of several steps that is under way."""
    return f"finish it (`git {command} --continue`) or abort it (`git {command} --abort`)"


def left_unmerged(files: list[str], where: str) -> str:
    """Files unmerged `where` (in its lane LANE) with no command under way, said as what they
    are and what leaves them so."""
    return (f"{listed(files)} unmerged {where} with no merge or other command under way (as a "
            "`git stash pop` or `git stash apply` that conflicted leaves them: git's conflict "
            "markers are in them)")


def left_in_checkout(root: Path, git_dir: Path, files: list[str]) -> str:
    """The stop on files the agent left unmerged in your checkout, whose attempt is rolled
    back, its files put back as the task began: a merge (cherry-pick, revert) it left stopped
    on a conflict is said as one, with the `--quit` that ends it leaving those files as they
    are (`--continue` would commit the merge's other side into your history, `--abort`
    takes your staged edits away, from the index and the files); else the files, left with
    none under way."""
    found = in_progress(git_dir)
    if found is None:
        return (f"the agent left {left_unmerged(files, 'in your checkout')}, so nothing of "
                "its work was committed for this task; the next run runs its agent again")
    what, command = found
    return (f"the agent left {what} stopped on a conflict in your checkout ({listed(files)} "
            "unmerged, holding git's conflict markers), so nothing of its work was committed "
            f"for this task and its files are put back as the task began, but git still has "
            f"{what} under way: `git -C {typed(root)} {command} --quit` ends it, leaving your "
            "files as they are; after it, the next run runs its agent again")


def quit_line(root: Path, git_dir: Path, git: Git) -> str | None:
    """The line for a merge (cherry-pick, revert) under way in your checkout with nothing of
    it in the index (HEAD's tree, nothing unmerged: what the rollback of an agent's attempt
    that left one stopped leaves): `--quit` ends it; `--continue` would commit its other side
    into your history with none of its changes (what you want only where you resolved your own
    merge by keeping HEAD's side everywhere). None for any other, and for a rebase or an am
    session (a rebase's HEAD is detached mid-way; an am's patch that did not apply leaves the
    index as HEAD has it, and may be yours to apply)."""
    found = in_progress(git_dir)
    if found is None or found[1] not in ("merge", "cherry-pick", "revert"):
        return None
    # Exit 1: the index is not HEAD's tree (unmerged entries are differences too).
    if git.code("diff-index", "--cached", "--quiet", "HEAD", "--", codes=(0, 1, 128))[0]:
        return None
    what, command = found
    merge = (" (`git merge --continue` would record a merge of its other side with none of "
             "its changes)") if command == "merge" else ""
    return (f"{what} is in progress in {root} with nothing of it left in the index (HEAD's "
            "tree, nothing unmerged: what the rollback of an agent's attempt that left it "
            f"stopped leaves): `git -C {typed(root)} {command} --quit` ends it, leaving your "
            f"files as they are{merge}, then run again")


def unmerged(git: Git) -> list[str]:
    """The files git's index holds unmerged (a `git stash pop` that conflicted leaves them so
    with no command under way), each once, in git's order."""
    out = git.out("ls-files", "--unmerged", "-z")
    # "mode sha stage\tpath", one entry a stage.
    return list(dict.fromkeys(e.split("\t", 1)[1] for e in out.split("\0") if "\t" in e))


def restore(root: Path, files: Iterable[str]) -> str:
    """The command that ends unmerged `files` in the checkout at `root`: each back as HEAD
    has it (or gone, where HEAD has none), its conflict markers with it."""
    return (f"git -C {typed(root)} restore --source=HEAD --staged --worktree -- "
            + " ".join(typed(f) for f in files))


def edited(git: Git, files: list[str], behind: str | None) -> tuple[list[str], list[str]]:
    """Which of `files` you have edited, staged or left untracked in the checkout, and which of
    those are untracked. `behind`: the commit the checkout is at while a lock held its follow
    off (agentloop.vcs.git.behind), or None."""
    if behind is not None:
        return _edited_behind(git, files, behind)
    out = git.code("status", "--porcelain", "-z", "--untracked-files=all", "--ignored=no", "--",
                   *files)[1]
    entries = [entry for entry in out.split("\0") if len(entry) > 3]
    return (sorted({entry[3:] for entry in entries}),
            sorted({entry[3:] for entry in entries if entry.startswith("?? ")}))


def already(git: Git, commit: str, paths: list[str]) -> set[str]:
    """Of tracked `paths`, those whose index entry and file on disk hold just what `commit` has
    there (deleted, where it has none): a landing of `commit` finds nothing to change in them."""
    if not paths:
        return set()
    staged = git.code("diff-index", "--cached", "--name-only", "-z", commit, "--", *paths)[1]
    on_disk = git.code("--no-optional-locks", "diff-files", "--name-only", "-z", "--",
                       *paths)[1]
    differ = {p for p in (staged + "\0" + on_disk).split("\0") if p}
    return {p for p in paths if p not in differ}


def _edited_behind(git: Git, files: list[str], at: str) -> tuple[list[str], list[str]]:
    """`edited` while the checkout is behind: against the commit it is at, not the branch (whose
    later tasks' files `git status` shows as staged deletions, nobody's edits). No command takes
    the index lock."""
    look = ("--no-optional-locks",)
    staged = git.code(*look, "diff", "--cached", "--name-only", "-z", at, "--", *files)[1]
    changed = git.code(*look, "diff", "--name-only", "-z", "--", *files)[1]
    untracked = git.code(*look, "ls-files", "-z", "--others", "--exclude-standard", "--",
                         *files)[1]
    new = [p for p in untracked.split("\0") if p]
    return sorted({p for p in (staged + "\0" + changed).split("\0") if p} | set(new)), \
        sorted(new)


def how(untracked: list[str], root: Path) -> str:
    """What lets a waiting landing go on: a plain `git stash` leaves an untracked file where it
    is, in the way of the task's file of that name. A later `git stash pop` refuses while any
    file it holds untracked is there again (the task's, the plan the run put back): the
    stash's untracked files are its third parent, from which a file comes back alone (into
    checkout `root`, named in the command: its path is from the top, typed from any folder)."""
    if not untracked:
        return "commit or stash them and it lands on the branch"
    return (f"commit or stash them (an untracked file such as {untracked[0]} with `git stash "
            "-u`, or move it away) and it lands on the branch; `git stash pop` then refuses on "
            f"the files that are back (the task's, the plan): `git -C {typed(root)} checkout "
            f"'stash@{{0}}^3' -- {typed(untracked[0])}` brings yours back")
