"""A working copy of its own for each group a parallel run works on: a git worktree on a branch of
its own, or a jj workspace, started from the main line as it stands.

Where they live: `.agent-loop/lanes/<name>/` in the repository. `.agent-loop/` is ignored by git
and jj from its first instant (its own .gitignore holds `*`), so the main checkout never sees a
lane's files, and a lane is found again by the next run wherever it was left. Branches are
`agent-loop/<name>` (git); jj workspaces are named `agent-loop-<name>`.

A crash (SIGKILL, power loss) may leave a lane behind in any state: registered but its folder gone,
locked mid-`worktree add` ("initializing"), or whole with commits not yet on the main line. None of
that is a reason to refuse: a healthy lane is reused as it is (its branch keeps what it holds), a
broken one is cleaned (git: `worktree remove -f -f`, `prune`; jj: `workspace forget`) and made
again on its branch, which is never deleted here unless asked for: nothing on it is lost.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentloop import proc
from agentloop.errors import ProcessError, VcsError
from agentloop.vcs import STATE_DIR

LANES = "lanes"
BRANCH_PREFIX = "agent-loop/"
JJ_PREFIX = "agent-loop-"
# The tip a branch had before a fresh start moved it, kept so a fresh start never loses a commit.
PREVIOUS = "refs/agent-loop/previous/"


@dataclass(frozen=True)
class Workspace:
    """One group's working copy: its name, folder, branch (git) or workspace name (jj)."""

    name: str
    path: Path
    branch: str         # git: the branch's short name; jj: the workspace's name
    reused: bool = False


def lanes_dir(root: Path) -> Path:
    """The folder every lane of this repository lives in."""
    return root / STATE_DIR / LANES


def lane_name(number: int, group: str) -> str:
    """A name for group `number` (1-based) that is a safe folder and branch name."""
    slug = re.sub(r"[^a-z0-9]+", "-", group.casefold()).strip("-")[:30].strip("-")
    return f"{number}-{slug}" if slug else str(number)


def _run(argv: list[str], cwd: Path, codes: tuple[int, ...] = (0,)) -> proc.Completed:
    env = {**os.environ, "JJ_EDITOR": "false", "GIT_LITERAL_PATHSPECS": "1"}
    try:
        done = proc.run(argv, cwd=cwd, env=env, check=False, timeout=600)
    except ProcessError as exc:  # a missing program, a timeout
        raise VcsError(f"`{' '.join(argv[:3])}` failed: {exc}") from None
    if done.returncode not in codes:
        detail = (done.stderr or done.stdout).strip().replace("\n", " ")
        raise VcsError(f"`{' '.join(argv)}` failed: {detail}")
    return done


def _git(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    return _run(["git", *args], root, codes).stdout.strip()


# -- git ------------------------------------------------------------------------------------------

def git_worktrees(root: Path) -> dict[Path, dict[str, str]]:
    """Registered worktrees by folder: their porcelain fields (branch, locked, prunable...)."""
    out = _git(root, "worktree", "list", "--porcelain")
    found: dict[Path, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in out.splitlines() + [""]:
        if not line:
            if "worktree" in current:
                found[Path(current["worktree"]).resolve()] = current
            current = {}
            continue
        key, _, value = line.partition(" ")
        current[key] = value
    return found


def open_git(root: Path, name: str, base: str, fresh: bool) -> Workspace:
    """The worktree of lane `name` on branch agent-loop/<name>: reused when a healthy one is
    there and `fresh` is False, else (re)made. `fresh`: the branch starts at `base` (its old tip
    kept under refs/agent-loop/previous/); otherwise a branch that exists keeps its commits."""
    path = (lanes_dir(root) / name).resolve()
    branch = BRANCH_PREFIX + name
    known = git_worktrees(root).get(path)
    if known is not None and _healthy(path, known) and known.get("branch") == \
            f"refs/heads/{branch}":
        if not fresh:
            return Workspace(name, path, branch, reused=True)
        _git(path, "reset", "-q", "--hard")
        _git(path, "clean", "-q", "-f", "-d")
        _keep_previous(root, branch, base)
        _git(path, "reset", "-q", "--hard", base)
        return Workspace(name, path, branch)
    clean_git(root, path)
    exists = _git(root, "branch", "--list", branch) != ""
    path.parent.mkdir(parents=True, exist_ok=True)
    if exists and not fresh:
        _git(root, "worktree", "add", "-q", str(path), branch)
        return Workspace(name, path, branch, reused=True)
    if exists:
        _keep_previous(root, branch, base)
    _git(root, "worktree", "add", "-q", "-B", branch, str(path), base)
    return Workspace(name, path, branch)


def _healthy(path: Path, fields: dict[str, str]) -> bool:
    # A kill inside `worktree add` leaves it locked "initializing", with a half checkout.
    return path.is_dir() and "prunable" not in fields and "locked" not in fields


def _keep_previous(root: Path, branch: str, base: str) -> None:
    tip = _git(root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", codes=(0, 1))
    if tip and tip != _git(root, "rev-parse", base):
        _git(root, "update-ref", "-m", "agent-loop: a lane started afresh",
             PREVIOUS + branch.removeprefix(BRANCH_PREFIX), tip)


def clean_git(root: Path, path: Path) -> None:
    """Whatever is registered or left on disk at `path`: unregistered and deleted (branches
    stay)."""
    path = path.resolve()
    if path in git_worktrees(root):
        _git(root, "worktree", "unlock", str(path), codes=(0, 128))
        _git(root, "worktree", "remove", "-f", "-f", str(path), codes=(0, 128))
    if path.exists():
        shutil.rmtree(path)
    _git(root, "worktree", "prune")


def remove_git(root: Path, workspace: Workspace, drop_branch: bool = False) -> None:
    """The lane's worktree removed; its branch too when asked (its work is on the main line)."""
    clean_git(root, workspace.path)
    if drop_branch:
        _git(root, "branch", "-q", "-D", workspace.branch, codes=(0, 1))


def sweep_git(root: Path, keep: set[str], known: set[str] | None = None) -> list[str]:
    """Remove lane worktrees whose names are not in `keep` (left by an earlier run), among the
    `known` names when given (another copy's, a rehearsal's, is left alone); their branches
    stay. Returns the names removed."""
    gone = []
    folder = lanes_dir(root).resolve()
    registered = {p for p in git_worktrees(root) if p.parent == folder}
    on_disk = {p.resolve() for p in folder.iterdir()} if folder.is_dir() else set()
    for path in sorted(registered | on_disk):
        if path.name not in keep and (known is None or path.name in known):
            clean_git(root, path)
            gone.append(path.name)
    return gone


def drop_branches(root: Path, names: set[str]) -> None:
    """Delete the lane branches of these lanes, where they exist."""
    for name in sorted(names):
        _git(root, "branch", "-q", "-D", BRANCH_PREFIX + name, codes=(0, 1))


# -- jj -------------------------------------------------------------------------------------------

JJ = ["jj", "--no-pager", "--color=never"]


def jj_workspaces(root: Path) -> set[str]:
    """The names of the repository's jj workspaces."""
    out = _run([*JJ, "--ignore-working-copy", "workspace", "list", "-T", 'name ++ "\\n"'],
               root).stdout
    return {line.strip() for line in out.splitlines() if line.strip()}


def open_jj(root: Path, name: str, base: str, fresh: bool) -> Workspace:
    """Lane `name`'s jj workspace: reused (brought up to date if stale) when whole and not
    `fresh`, else forgotten and added again with a new empty @ on `base`. A forgotten
    workspace's changes stay in the repository: nothing is lost."""
    path = (lanes_dir(root) / name).resolve()
    workspace = JJ_PREFIX + name
    listed = workspace in jj_workspaces(root)
    if listed and not fresh and (path / ".jj").is_dir():
        _run([*JJ, "workspace", "update-stale"], path)
        return Workspace(name, path, workspace, reused=True)
    clean_jj(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    _run([*JJ, "workspace", "add", "--name", workspace, "-r", base, str(path)], root)
    return Workspace(name, path, workspace)


def clean_jj(root: Path, name: str) -> None:
    """Lane `name`'s workspace forgotten and its folder deleted."""
    workspace = JJ_PREFIX + name
    if workspace in jj_workspaces(root):
        _run([*JJ, "--ignore-working-copy", "workspace", "forget", workspace], root)
    path = lanes_dir(root) / name
    if path.exists():
        shutil.rmtree(path)


def remove_jj(root: Path, workspace: Workspace) -> None:
    """The lane's workspace forgotten and its folder deleted."""
    clean_jj(root, workspace.name)


def sweep_jj(root: Path, keep: set[str], known: set[str] | None = None) -> list[str]:
    """Forget and delete lane workspaces whose names are not in `keep`: registered ones and
    folders in this root's lanes folder, among the `known` names when given (jj names
    workspaces repository-wide: another copy's, a rehearsal's, is left alone)."""
    names = {w.removeprefix(JJ_PREFIX) for w in jj_workspaces(root) if w.startswith(JJ_PREFIX)}
    folder = lanes_dir(root)
    if folder.is_dir():
        names |= {p.name for p in folder.iterdir()}
    if known is not None:
        names &= known
    gone = sorted(n for n in names if n not in keep)
    for name in gone:
        clean_jj(root, name)
    return gone
