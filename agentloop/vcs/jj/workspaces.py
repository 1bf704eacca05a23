"""jj workspaces for the lanes of a parallel run (agentloop.vcs.lanes): one per group, named
`agent-loop-<name>`. A forgotten workspace's changes stay in the repository: nothing is lost.
A lane's files are taken into its @ only by a jj command run there (took_in_a_lane)."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.jj.leftovers import BEGUN
from agentloop.vcs.jj.run import Jj
from agentloop.vcs.jj.stored import workspace_folders
from agentloop.vcs.lanes import JJ_PREFIX, Workspace, bookkeeping, check_folder, lanes_dir


def lane_of(workspace: str) -> str | None:
    """The name of the lane whose jj workspace is `workspace` (`agent-loop-<name>`); None for
    any other (yours, `default`)."""
    return workspace.removeprefix(JJ_PREFIX) if workspace.startswith(JJ_PREFIX) else None


def lane_folder(root: Path, workspace: str) -> Path | None:
    """Where the lane whose jj workspace is `workspace` lives in the repository at `root`
    (whether or not it is there now); None when `workspace` is no lane's."""
    name = lane_of(workspace)
    return lanes_dir(root) / name if name is not None else None


def took_in_a_lane(jj: Jj, change_id: str) -> bool:
    """A killed run's attempt that is @ of one of the lanes of the checkout `jj` runs in (that
    run worked in lanes, this one works here): its agent's files are on disk in the lane, never
    taken into the change (finish's `jj commit` does that, or the lane's next command), so kept
    aside from the checkout it held nothing, and the agent was paid again. Taken in now by a
    command run in that lane; whether one was."""
    out = jj.out("--ignore-working-copy", "log", "--no-graph", "-r", change_id, "-T",
                 "working_copies")
    took = False
    for name in (w.removesuffix("@") for w in out.split()):
        path = lane_folder(jj.root, name)
        if path is None or not (path / ".jj").is_dir():
            continue
        try:
            jj.out("log", "--no-graph", "-r", "@", "-T", "change_id", cwd=path)
        except VcsError:
            continue  # a lane jj cannot read (stale, say): its change as it is
        took = True
    return took


def jj_workspaces(root: Path) -> set[str]:
    """The names of the repository's jj workspaces."""
    out = Jj(root).out("--ignore-working-copy", "workspace", "list", "-T", 'name ++ "\\n"')
    return {line.strip() for line in out.splitlines() if line.strip()}


def open_jj(root: Path, name: str, base: str, fresh: bool, config: list[str] | None = None,
            listed: set[str] | None = None) -> Workspace:
    """Lane `name`'s jj workspace: reused (brought up to date if stale) when whole and not
    `fresh`, else forgotten and added again with a new empty @ on `base`. A forgotten
    workspace's changes stay in the repository: nothing is lost. `config`: the run's options
    for jj in the user's checkout (what its snapshot leaves out), which `workspace add`
    snapshots. `listed`: the repository's workspaces as just listed (by the sweep), when
    nothing has changed them since."""
    with bookkeeping(root):
        return _open_jj(root, name, base, fresh, config or [], listed)


def _open_jj(root: Path, name: str, base: str, fresh: bool, config: list[str],
             listed: set[str] | None) -> Workspace:
    check_folder(root, (name,))
    path = (lanes_dir(root) / name).resolve()
    workspace = JJ_PREFIX + name
    there = workspace in (listed if listed is not None else jj_workspaces(root))
    theirs = _anothers(root, {name}) if there else {}
    if name in theirs:
        raise VcsError(f"jj workspace {workspace} is at {theirs[name]}, a lane of another "
                       "checkout of this repository (an older agent-loop named a plan's lanes "
                       "alike in every workspace): agent-loop leaves it as it is; `jj "
                       f"workspace forget {workspace}` (its changes stay in the repository), "
                       "then run again")
    if there and not fresh and (path / ".jj").is_dir():
        Jj(path, confined=True).out("workspace", "update-stale")
        return Workspace(name, path, workspace, reused=True)
    clean_jj(root, name, there, left=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    Jj(root, list(config)).out("workspace", "add", "--name", workspace, "-r", base, str(path))
    return Workspace(name, path, workspace)


def clean_jj(root: Path, name: str, listed: bool | None = None, left: bool = False) -> None:
    """Lane `name`'s workspace forgotten and its folder deleted. `listed`: whether the
    repository's list of workspaces, just read, holds it (None: ask). `left`: a lane an earlier
    run left, whose @ may be a change its begin described and never used (BEGUN): dropped too,
    as jj drops an empty, undescribed @ it forgets (else `jj log` shows it for good)."""
    workspace = JJ_PREFIX + name
    if (listed if listed is not None else workspace in jj_workspaces(root)):
        if left:
            Jj(root).out("--ignore-working-copy", "abandon", f"{workspace}@ & {BEGUN}")
        Jj(root).out("--ignore-working-copy", "workspace", "forget", workspace)
    path = lanes_dir(root) / name
    if path.exists():
        shutil.rmtree(path)


def _anothers(root: Path, names: set[str]) -> dict[str, Path]:
    """The lanes of `names` whose workspace jj records at a folder that is there, elsewhere
    than this checkout's lanes folder: another checkout's, by name -> folder. Read from the
    repository's files; none where they do not say (an older jj)."""
    folders = workspace_folders(root) if names else None
    found = {}
    for name in names:
        folder = (folders or {}).get(JJ_PREFIX + name)
        if folder is not None and folder.resolve() != (lanes_dir(root) / name).resolve() and \
                folder.is_dir():
            found[name] = folder.resolve()
    return found


def remove_jj(root: Path, workspace: Workspace) -> None:
    """The lane's workspace forgotten and its folder deleted."""
    with bookkeeping(root):
        clean_jj(root, workspace.name)


def sweep_jj(root: Path, keep: set[str], known: set[str] | None = None) -> list[str]:
    """Forget and delete lane workspaces whose names are not in `keep`: registered ones and
    folders in this root's lanes folder, among the `known` names when given (jj names
    workspaces repository-wide: another copy's, a rehearsal's, is left alone)."""
    return swept_jj(root, keep, known)[0]


def swept_jj(root: Path, keep: set[str], known: set[str] | None = None
             ) -> tuple[list[str], set[str] | None]:
    """sweep_jj's names removed, and the repository's workspaces as it listed them when it
    removed none (else None)."""
    listed = jj_workspaces(root)
    names = {n for n in map(lane_of, listed) if n is not None}
    folder = lanes_dir(root)
    if folder.is_dir():
        names |= {p.name for p in folder.iterdir()}
    if known is not None:
        names &= known
    # Another checkout's lane under one of these names (an older version named a plan's lanes
    # alike in every workspace) is not this sweep's.
    gone = sorted(n for n in names - set(_anothers(root, names)) if n not in keep)
    with bookkeeping(root):
        for name in gone:
            clean_jj(root, name, left=True)
    return gone, (listed if not gone else None)
