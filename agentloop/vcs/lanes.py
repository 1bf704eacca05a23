"""A working copy of its own for each group a parallel run works on (a git worktree on a branch of
its own, agentloop.vcs.git.worktrees; or a jj workspace, agentloop.vcs.jj.workspaces), started from
the main line as it stands: what both kinds share.

Where they live: `.agent-loop/lanes/<name>/` in the repository. `.agent-loop/` is ignored by git
and jj from its first instant (its own .gitignore holds `*`), so the main checkout never sees a
lane's files, and a lane is found again by the next run wherever it was left. Branches are
`agent-loop/<name>` (git); jj workspaces are named `agent-loop-<name>`. A parallel run's lane
names carry its plan's key (`tasks.3f2a1b-2-backend`), so two plans with a group of the same name
never share a lane, and the dot keeps them apart from a CI fleet's `agent-loop/<plan>/<lane>`
branches (a plan's part there never holds one). A lane an older version left under the bare name
(`2-backend`) is adopted by its plan's next run (agentloop.vcs.git.worktrees.open_git). Branches
and registrations are the repository's, shared by all its checkouts: a linked checkout's key
holds its own name too (linked_checkout), so a plan at the same path there names other lanes.

A sequential run (one group at a time) works in one lane for all its groups, `<key>-serial`: a
group that ends with every finished task landed leaves it to the next group, which goes on there
from the main line's tip as it is then (agentloop.run.scheduler), and the lane goes after the
run's last group. A group that leaves something in it (a conflict, a held landing, an attempt a
kill cut short) keeps it, under that name, for its own next run; the groups after it work in
lanes of their own meanwhile (`<key>-<n>-<group>`, as a parallel run's).

A crash (SIGKILL, power loss) may leave a lane behind in any state: registered but its folder gone,
locked while it was made (git's own "initializing" inside `worktree add`, or agent-loop's lock until
its checkout is whole), registered with a file git had not written yet, or whole with commits not
yet on the main line. None of
that is a reason to refuse: a healthy lane is reused as it is (its branch keeps what it holds), a
broken one is cleaned and made again on its branch, which is never deleted here unless asked for:
nothing on it is lost.

Adding, removing and pruning worktrees (and jj's workspace list) is bookkeeping in files the
lanes share: one lane's `git worktree prune` while another's `git worktree add` is half done
unregisters the new one. Every such step holds `bookkeeping()`, a lock taken in turn by the lanes
of one run and by two runs at once.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from agentloop.errors import VcsError
from agentloop.files.digest import sha1
from agentloop.files.lock import held
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.vcs import STATE_DIR

LANES = "lanes"
BRANCH_PREFIX = "agent-loop/"
JJ_PREFIX = "agent-loop-"
# The tip a branch had before a fresh start moved it, kept so a fresh start never loses a commit.
PREVIOUS = "refs/agent-loop/previous/"
LOCK = "lanes.lock"
SERIAL = "serial"


@dataclass(frozen=True)
class Workspace:
    """One group's working copy: its name, folder, branch (git) or workspace name (jj)."""

    name: str
    path: Path
    branch: str         # git: the branch's short name; jj: the workspace's name
    reused: bool = False
    note: str = ""      # what making it did that you should know (a branch's commits kept)


def lanes_dir(root: Path) -> Path:
    """The folder every lane of this repository lives in."""
    return root / STATE_DIR / LANES


def lane_name(number: int, group: str) -> str:
    """A name for group `number` (1-based) that is a safe folder and branch name."""
    slug = re.sub(r"[^a-z0-9]+", "-", group.casefold()).strip("-")[:30].strip("-")
    return f"{number}-{slug}" if slug else str(number)


def plan_key(task_file: str, checkout: str = "") -> str:
    """The key of the plan whose task file is `task_file` (relative to the repository, slash-
    separated): readable, and unique per path (`docs/tasks.md` -> `docs-tasks.1a2b3c`) and per
    checkout of the repository: `checkout` is a linked checkout's id (linked_checkout), which
    goes into the hash; the main checkout's ("") keeps the key it always had."""
    stem = task_file[:-3] if task_file.lower().endswith(".md") else task_file
    slug = re.sub(r"[^a-z0-9]+", "-", stem.casefold()).strip("-")[:24].strip("-") or "plan"
    hashed = f"{checkout}\0{task_file}" if checkout else task_file
    return f"{slug}.{sha1(hashed.encode('utf-8', 'surrogateescape')).hexdigest()[:6]}"


def linked_checkout(root: Path) -> str:
    """"" for a repository's main checkout; for a linked one (`git worktree add ../wt`), the
    name of its own git dir under the repository's `worktrees/` (what `git rev-parse --git-dir`
    ends in), read from its `.git` file; for a jj workspace other than the repository's first
    (`jj workspace add ../wt`), its name. Lane branches, worktree registrations and jj's
    workspace names are the repository's, shared by every checkout: a plan at the same path in
    two checkouts would otherwise name the same lanes, and one checkout's run would move or
    sweep the other's."""
    if (root / ".jj" / "repo").is_file():  # a link to the repository: not its first workspace
        from agentloop.vcs.jj.stored import workspace_name

        # The folder's name where jj's file does not say (a format of jj's to come).
        return workspace_name(root) or root.name
    try:
        text = (root / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):  # a folder (the main checkout), or none (jj)
        return ""
    if not text.startswith("gitdir: "):
        return ""
    own = Path(text[len("gitdir: "):])
    # A submodule's is under `modules/`: the main checkout of a repository of its own.
    return own.name if own.parent.name == "worktrees" else ""


def lane_on_branch(root: Path, name: str) -> bool:
    """Whether this checkout's lanes folder holds lane `name` checked out on its branch, as
    its files say (its `.git` file, its registration's HEAD): a lane this checkout made."""
    path = lanes_dir(root) / name
    try:
        link = (path / ".git").read_text(encoding="utf-8").strip()
        if path.is_symlink() or not link.startswith("gitdir: "):
            return False
        head = (path / link[len("gitdir: "):] / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return head == f"ref: refs/heads/{BRANCH_PREFIX}{name}"


def plan_lane(key: str, number: int, group: str) -> str:
    """The lane of group `number` of the plan with `key`."""
    return f"{key}-{lane_name(number, group)}"


def serial_lane(key: str) -> str:
    """The one lane of a sequential run of the plan with `key` (no group's name: a group's lane
    name starts with its number, and the plan's key keeps two plans apart)."""
    return f"{key}-{SERIAL}"


def check_folder(root: Path, names: Iterable[str]) -> None:
    """VcsError, one line, when the lanes folder holds something under one of these lanes'
    names that is not a lane of ours: a symlink (git would make its target, wherever it
    points, and register a worktree there) or anything but a folder (a file). Not ours to
    delete or follow: said, to be moved away, before any lane is swept or made."""
    folder = lanes_dir(root)
    for name in sorted(names):
        entry = folder / name
        if entry.is_symlink():
            kind = "symlink"
        elif entry.exists() and not entry.is_dir():
            kind = "file"
        else:
            continue
        raise VcsError(f"{entry} is a {kind}, not a lane: agent-loop makes lane {name} there "
                       "and neither deletes nor follows what is not its own; move it away "
                       "(out of the lanes folder), then run again")


def lane_left(root: Path, name: str) -> bool:
    """Whether a lane `name` has a folder in the lanes folder (a git lane's branch is asked
    apart: agentloop.vcs.choose.has_lane)."""
    return (lanes_dir(root) / name).exists()


@contextmanager
def bookkeeping(root: Path) -> Iterator[None]:
    """Hold the lock every change to the repository's list of lanes takes."""
    folder = root / STATE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    # Each holder opens the lock afresh (agentloop.files.lock), so it also keeps apart the
    # threads of one process, which a shared (reentrant) lock would let in together.
    with held(folder / LOCK):
        yield
