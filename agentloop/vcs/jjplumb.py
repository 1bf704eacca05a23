"""What the jj backend says to jj: the global options, the revision template and its record,
exact-path filesets, and where the repository is."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from agentloop import proc

# No pager, no colour, no editor (descriptions come with -m; `false` fails at once instead).
JJ = ["jj", "--no-pager", "--color=never"]
MAX_NEW_FILE = 1 << 40  # bytes: no file a task writes is too big to be part of its change
# One record per revision: fields split by \t, files by \0, records ended by \x1e.
INFO = ('change_id ++ "\\t" ++ commit_id ++ "\\t" ++ current_working_copy ++ "\\t" ++ empty'
        ' ++ "\\t" ++ description.len() ++ "\\t" ++ parents.map(|p| p.change_id()).join(",")'
        ' ++ "\\t" ++ self.diff().files().map(|f| f.source().path() ++ "\\0" ++ f.path())'
        '.join("\\0") ++ "\\x1e"')


@dataclass(frozen=True)
class _Rev:
    """What `INFO` says about one revision."""

    change_id: str
    commit_id: str
    is_wc: bool
    empty: bool
    described: bool
    parents: tuple[str, ...]
    files: tuple[str, ...]


def _env() -> dict[str, str]:
    base = {**os.environ, "JJ_EDITOR": "false"}
    return {**base, **_identity(tuple(sorted(base.items())))}


@functools.lru_cache(maxsize=4)
def _identity(environ: tuple[tuple[str, str], ...]) -> dict[str, str]:
    # Asked once per environment: jj's identity, else git's (agentloop.vcs.stays_git).
    from agentloop.vcs.stays_git import identity
    return identity(dict(environ))


def jj_root(folder: Path) -> Path | None:
    """The jj repository holding `folder`, or None; raises ProgramNotFound without jj."""
    done = proc.run([*JJ, "--ignore-working-copy", "root"], cwd=folder, env=_env(), check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 else None


def _fileset(paths: list[str]) -> str:
    """Exact paths as a jj fileset, so no file name is read as a pattern."""
    def quote(path: str) -> str:
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return " | ".join(f"root-file:{quote(p)}" for p in paths)
