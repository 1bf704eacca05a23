"""A jj command killed after it moved git's HEAD and before it recorded its operation, in a
checkout colocated with git: git's HEAD goes back where jj's record has it.

jj 0.45 ends a command in a colocated checkout by moving git's HEAD to @'s new parent (a reflog
line "export from jj"), writing git's index, and only then recording the operation and writing
the files on disk. Killed in between, git's HEAD names a commit jj's record does not have under
@, and the files on disk are the old ones: jj's next command takes the moved HEAD for a checkout
the user made with git, puts a new @ on it and snapshots the old files into that @, so the files
of what the command put under @ (a landed task's change) show as deleted there. With HEAD back,
the command is undone whole, as if killed a moment earlier, and whoever ran it runs it again.
When @'s parent was jj's root (a repository with no commit yet), git's HEAD was unborn and the
reflog's old side is all zeros: HEAD goes back to unborn, on `refs/jj/root`, where jj itself
points it when it moves @ back onto its root (a fresh `jj git init` leaves `refs/heads/main`,
which that reflog no longer names; either way jj reads no commit there).
"""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.jj.run import Jj

EXPORT = "export from jj"
# What jj points an unborn git HEAD at when it moves @ onto its root commit (all zeros).
ROOT_REF = "refs/jj/root"


def undo_cut_short_export(root: Path, jj: Jj) -> str | None:
    """Put git's HEAD back when a killed jj command moved it without recording its operation;
    a note when it did. Costs no process unless HEAD moved after jj's last operation."""
    git_dir = root / ".git"
    try:
        moved = (git_dir / "logs" / "HEAD").stat().st_mtime_ns
        recorded = max(p.stat().st_mtime_ns for p in (root / ".jj" / "repo" / "op_heads" /
                                                     "heads").iterdir())
        if moved <= recorded:
            return None  # the common case: jj recorded an operation after its last HEAD move
        last = (git_dir / "logs" / "HEAD").read_text().rstrip("\n").rsplit("\n", 1)[-1]
        head = (git_dir / "HEAD").read_text().strip()
    except (OSError, ValueError):
        return None
    ids, _, message = last.partition("\t")
    old, new = (ids.split(" ") + ["", ""])[:2]
    if message != EXPORT or head != new or not new.strip("0"):
        return None
    # jj's record: @'s first parent at its last operation, read without a snapshot (which would
    # take the moved HEAD in).
    parents = jj.out("--ignore-working-copy", "log", "--no-graph", "-r", "@",
                     "-T", 'parents.map(|c| c.commit_id()).join(" ")').split()
    if parents[:1] != [old]:
        return None
    from agentloop.vcs.git.run import Git

    why = "agent-loop: undo a killed jj's export"
    if old.strip("0"):
        Git(root).out("update-ref", "--no-deref", "-m", why, "HEAD", old, new)
        where = old[:12]
    else:
        Git(root).out("symbolic-ref", "-m", why, "HEAD", ROOT_REF)
        where = "no commit (jj's root)"
    return (f"put git's HEAD back on {where}, where jj's last operation has it: a killed jj "
            "command had moved it without recording its operation")
