"""A git user's repository stays a git user's repository.

jj colocated with git keeps git's HEAD detached: after a run in a repository jj took over, `git
status` says `HEAD detached`, the user's branch has not moved, and the tasks' commits are on no
branch (measured with jj 0.45.1, tests/vcs/test_git_stays.py). So with `--vcs auto` (the
default) a repository that is git only is run with git, even where jj is installed, and the run
says so in its first line; `--vcs jj` still turns it into a colocated jj repository, as asked,
and the jj backend says in one line what that did (colocated_note), or, in one still on a
branch, what the run will do to it (attached_note).

A repository an earlier agent-loop already turned (a colocated jj repository, git detached) gets
one warning with the commands that bring the user's branch to the tasks' commits; its history
is never rewritten.
"""

from __future__ import annotations

from pathlib import Path

from agentloop.files.shown import typed
from agentloop.proc.program_path import which
from agentloop.vcs import find_root
from agentloop.vcs.git import refs
from agentloop.vcs.git.run import Git


def git_only(repo: Path) -> bool:
    """A git repository (its own .git folder, not a worktree's link) that jj has not taken."""
    return (repo / ".git").is_dir() and not (repo / ".jj").is_dir()


def git_kept_note(asked: str, root: Path) -> str | None:
    """Why `auto` runs git here although jj is installed, in one line; None otherwise."""
    repo = find_root(root)
    if asked != "auto" or repo is None or not git_only(repo) or which("jj") is None:
        return None
    return ("vcs: git, though jj is installed: this is a git repository and stays one (with jj, "
            "git would be left on a detached HEAD, away from your branch); --vcs jj turns it "
            "into a colocated jj repository")


def _git(root: Path, *args: str) -> tuple[int, str]:
    # A probe before the run: it takes no lock a user's own git would wait for.
    done = Git(root).run(*args, codes=None, timeout=60, env={"GIT_OPTIONAL_LOCKS": "0"})
    return done.returncode, done.stdout.strip()


def branch_of(git_dir: Path) -> str | None:
    """The branch git's HEAD file names, as `git symbolic-ref --short HEAD` would find: read,
    no process (a jj user's colocated repository is asked at every run's start). None when the
    file does not say (detached, unreadable, or a reftable repository's placeholder)."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not head.startswith("ref: refs/heads/") or head == "ref: refs/heads/.invalid":
        return None
    return head.removeprefix("ref: refs/heads/")


def _bookmark(branch: str) -> str:
    """A branch as a bookmark in a printed jj command. Imported here: these lines are said in a
    git run too, which loads nothing of jj's."""
    from agentloop.vcs.jj.symbols import typed_symbol
    return typed_symbol(branch)


def colocated_note(root: Path, branch: str | None) -> str:
    """What `jj git init --colocate` did to a git user's repository, in one line: git keeps
    working, but jj keeps git's HEAD detached and moves no branch, so the user's branch stays
    behind the tasks until they move it."""
    if branch is None:
        return f"initialized a colocated jj repository in {root} (git keeps working)"
    return (f"initialized a colocated jj repository in {root}: git keeps working, on a "
            f"detached HEAD from now on (jj's way), and your branch {branch} stays where it is; "
            f"`jj bookmark set {_bookmark(branch)} -r @-` after the run brings it to the "
            "tasks")


def attached_note(root: Path) -> str | None:
    """A colocated repository whose git is still on a branch (made colocated by the user, who
    works on with git): jj's first new change leaves git's HEAD detached and the branch behind,
    said once, before that happens; None once git is detached (jj's way, nothing new)."""
    git_dir = root / ".git"
    branch = branch_of(git_dir) if git_dir.is_dir() else None
    if branch is None or not refs.branch_tip(git_dir, f"refs/heads/{branch}"):
        return None  # `jj git init` names an unborn main: a jj user's, with no branch to leave
    return (f"this colocated repository runs with jj: git is on branch {branch} now, and on a "
            f"detached HEAD once the run begins (jj's way), your branch {branch} stays where it "
            f"is; `jj bookmark set {_bookmark(branch)} -r @-` after the run brings it to the "
            "tasks (`--vcs git` keeps git on it instead)")


def converted_warning(root: Path) -> str | None:
    """For a colocated jj repository whose git HEAD is detached on top of a branch, with
    commits that have no author (what an earlier agent-loop left in a git user's repository):
    the commands that take the user back to their branch with the tasks' commits on it."""
    repo = find_root(root)
    if repo is None or not (repo / ".jj").is_dir() or not (repo / ".git").is_dir():
        return None
    if branch_of(repo / ".git") or _git(repo, "symbolic-ref", "-q", "HEAD")[0] == 0:
        return None  # git is on a branch: nothing was left behind
    code, head = _git(repo, "rev-parse", "--verify", "-q", "HEAD")
    _, merged = _git(repo, "branch", "--format=%(refname:short)", "--merged", "HEAD")
    branches = [b for b in merged.splitlines() if b and not b.startswith("(")]
    if code != 0 or not branches:
        return None
    branch = next((b for b in ("main", "master") if b in branches), branches[0])
    _, empty = _git(repo, "log", "--format=%an", f"{branch}..HEAD")
    nameless = sum(1 for name in empty.splitlines() if name in ("", "JJ_EMPTY_STRING"))
    if not nameless:
        return None  # a jj user's own colocated repository: detached is how jj works
    authors = (f"; {nameless} of its commits have no author (`jj metaedit --update-author` "
               "gives them yours, rewriting them)")
    return (f"this repository was turned into a colocated jj repository (by jj, or an earlier "
            f"agent-loop): git is on a detached HEAD ({head[:12]}) and your branch {branch} "
            f"is behind it{authors}. With git: `git switch {typed(branch)} && git merge "
            f"--ff-only {head[:12]}` brings the branch to that work; with jj: `jj bookmark set "
            f"{_bookmark(branch)} -r @-`. agent-loop rewrites no history")


def new_repository_note(asked: str, root: Path) -> str | None:
    """In a folder under no version control: the repository the run makes before its first
    task, in one line (a rehearsal refuses instead: agentloop.vcs.private_copy)."""
    if asked == "none" or find_root(root) is not None:
        return None
    making = "jj git init" if asked == "jj" or (
        asked == "auto" and which("jj") is not None) else "git init"
    return (f"{root} is no repository yet: the run makes one there (`{making}`) before its "
            "first task, your files its first commit, so each task is a change you can "
            "revert; --vcs none runs without one")


def detached_head(root: Path) -> str | None:
    """The commit a git repository's HEAD stands on when it is on no branch (git's own doing,
    not jj's, which keeps git's HEAD detached by design), else None. Read, no process."""
    repo = find_root(root)
    if repo is None or (repo / ".jj").is_dir():
        return None
    git_dir = repo / ".git"
    if git_dir.is_file():  # a linked worktree: its own folder, named in that file
        own = refs.worktree_git_dir(repo)
        if own is None:
            return None
        git_dir = own
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return None if not head or head.startswith("ref:") else head


def detached_note(asked: str, root: Path) -> str | None:
    """A git repository whose HEAD is on no branch: the tasks' commits would go on no branch
    either, in one line with what to do."""
    head = None if asked in ("jj", "none") else detached_head(root)
    if head is None:
        return None
    return (f"git's HEAD is detached ({head[:12]}, on no branch): each task's commit would go "
            "on no branch, easy to lose once you check out another; `git switch -c <name>` "
            "(or `git switch <branch>`) first puts them on a branch")


def vcs_notes(asked: str, root: Path) -> list[str]:
    """The lines a run (and --dry-run, --rehearse) starts with about what it does to the
    repository's version control, before anything is done."""
    return [n for n in (new_repository_note(asked, root), git_kept_note(asked, root),
                        detached_note(asked, root), converted_warning(root)) if n]
