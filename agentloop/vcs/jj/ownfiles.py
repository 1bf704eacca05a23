"""The tool's own files in a jj working copy: the task file, the other plans' task files and
`.agent-loop/`, which must never land in a task's change.

jj snapshots the working copy into @ at every command, so every jj call we make runs with
`snapshot.auto-track` narrowed to leave them out (options): while they are untracked they stay
untracked (even `jj git init --colocate`, which snapshots at once, skips them). A tracked task
file (or one the agent's own `jj` call tracked) is still snapshotted into @, the task's change:
the backend squashes those edits down into its base before a change is sealed or abandoned
(holds says which paths go)."""

from __future__ import annotations

import json

from agentloop.vcs import STATE_DIR
from agentloop.vcs.jj.run import MAX_NEW_FILE, Jj, fileset


class OwnFiles:
    """The paths, relative to the working copy's root, that are the tool's and no task's.

    A plain class, set once: a dataclass would compile its methods at every jj run's start."""

    __slots__ = ("task_rel", "plans")

    def __init__(self, task_rel: str | None = None, plans: frozenset[str] = frozenset()) -> None:
        self.task_rel, self.plans = task_rel, plans

    def holds(self, rel: str) -> bool:
        """Whether `rel` is one of the tool's own files."""
        return (rel == self.task_rel or rel in self.plans or rel == STATE_DIR
                or rel.startswith(STATE_DIR + "/"))

    def others(self, paths: tuple[str, ...]) -> tuple[str, ...]:
        """The paths of `paths` that are not the tool's: what a task's change holds."""
        return tuple(p for p in paths if not self.holds(p))

    def options(self, auto_track: str) -> list[str]:
        """jj's --config options for the user's snapshot.auto-track minus these files."""
        ours = f'root:"{STATE_DIR}"'
        files = sorted(self.plans | ({self.task_rel} if self.task_rel else set()))
        if files:
            ours += " | " + fileset(files)
        # json.dumps makes a valid TOML string, so no file name can break the option. jj leaves
        # new files over 1 MiB out of a snapshot, silently: a task's change holds every file.
        return ["--config", "snapshot.auto-track=" + json.dumps(f"({auto_track}) ~ ({ours})"),
                "--config", f"snapshot.max-new-file-size={MAX_NEW_FILE}"]


def auto_track(jj: Jj) -> str:
    """The user's snapshot.auto-track (jj's default, every file, when unset)."""
    done = jj.run("config", "get", "snapshot.auto-track", codes=(0, 1, 2))
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "all()"
