"""git: your checkout left behind your branch by a landing whose follow (`git read-tree -m -u`)
git refused for the checkout's `.git/index.lock`: held by a git of yours (an editor's git panel,
a `git commit` waiting on its message), or left there by an agent that ran git, or `touch`, in
your checkout. The branch has the task's commit; the checkout's index and files are still those
of an older commit of it, so `git status` shows every later task's file as a staged deletion,
and a plain `git commit` of yours would take those deletions along.

The landing says so in one line, and the checkout follows (from the commit it is at to the
branch's tip, in one `read-tree -m -u`, which keeps every edit of yours) as soon as the lock is
gone: before the next landing, and at the run's end. A lock still there then, that appeared
during the run, that no process holds open and no git of yours runs beside, is an agent's
leftover (or a killed git's): it goes, and the checkout follows. Anything else is said with the
repair. The record the landing keeps in the git dir (RECORD, "<commit the checkout is at> <branch
tip>") lets the next run finish the follow (landing_record.finish_landing). Its name is here, in
this light module, for the landing that writes it (agentloop.vcs.git.mainline), the next run's
finishing that reads it, and the preflight that looks for it before loading that finishing."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.files.shown import typed
from agentloop.vcs.git.run import Git

LOCK = "index.lock"
# In the git dir while a landing's checkout has not followed the branch: "<old> <new>".
RECORD = "agent-loop-landing"
# The record's third word while the checkout is behind since a lock held its follow off.
BEHIND = "behind"
# How long the run's end waits for a lock that may be a git of yours, about to let it go.
GRACE_SECONDS = 1.5


def locked(git_dir: Path, error: str) -> bool:
    """Whether git refused for the checkout's index lock (its error names the file, in any
    language; the file is there)."""
    return LOCK in error and (git_dir / LOCK).exists()


def said(git_dir: Path) -> str:
    """The line a landing says once when the checkout cannot follow for the lock."""
    return (f"your checkout's {git_dir / LOCK} is held (by a git of yours, or left by the "
            "agent): the branch has the task's commit, and the checkout will follow when the "
            "lock goes (until then `git status` shows the tasks' files as staged deletions: "
            "commit nothing meanwhile)")


def followed(tip: str) -> str:
    return f"the lock is gone: your checkout followed the branch to {tip[:12]}"


def leftover(root: Path, git_dir: Path, since: float) -> bool:
    """Whether the checkout's index lock is nobody's now: it appeared after `since` (the run's
    start: one older is a git of yours), no process holds it open, and no git runs in your
    checkout (`git commit` keeps the lock, closed, while your editor is open)."""
    from agentloop.files import opened

    lock = git_dir / LOCK
    try:
        made = lock.stat().st_mtime
    except OSError:
        return False
    return made >= since and not opened.by_a_process(lock) and not _git_running(root)


def _git_running(root: Path) -> bool:
    """Whether a git process works in your checkout now (its folder in it, not in a lane of
    agent-loop's); on a system without /proc, assume one does."""
    proc_dir = Path("/proc")
    if not (proc_dir / "self").is_dir():
        return True
    top = str(root.resolve())
    lanes = os.path.join(top, ".agent-loop", "")
    for pid in os.listdir(proc_dir):
        if not pid.isdigit():
            continue
        try:
            if (proc_dir / pid / "comm").read_text().strip() != "git":
                continue
            cwd = os.readlink(proc_dir / pid / "cwd")
        except OSError:
            continue
        if (cwd == top or cwd.startswith(top + os.sep)) and not cwd.startswith(lanes):
            return True
    return False


def repair(root: Path, git_dir: Path, at: str, tip: str, in_the_way: bool = False) -> str:
    """The last word on a checkout still behind: what it is, and the command that brings it up
    to date keeping your edits (the follow the landing would have made). `in_the_way`: the
    lock is gone, and a file of yours stands where the follow writes (git refused it)."""
    lock = git_dir / LOCK
    gone = f"rm {typed(lock)} && " if lock.exists() and not in_the_way else ""
    why = ("a file of yours stands on a path the tasks changed: move it away, then" if
           in_the_way else f"{lock} {'held' if lock.exists() else 'was held'}; once it goes:")
    return (f"your checkout {root} is behind its branch: the branch is at {tip[:12]}, the "
            f"checkout's index and files still at {at[:12]}, so `git status` shows the tasks' "
            f"files as staged deletions; commit nothing before it follows ({why} "
            f"`{gone}git -C {typed(root)} read-tree -m -u {at[:12]} {tip[:12]}`, which keeps your "
            "edits, or run agent-loop again)")


def lags(git: Git, at: str, tip: str) -> list[str] | None:
    """The paths the checkout lags on, when its index holds `at`'s entries for every path that
    differs between `at` and `tip` (the follow never made; your edits elsewhere do not count);
    None when it does not (your own staged change on one of them: not ours to move)."""
    out = git.code("diff-tree", "-r", "-z", "--name-only", "--no-commit-id", at, tip)[1]
    paths = [p for p in out.split("\0") if p]
    if not paths:
        return None
    code, _ = git.code("--no-optional-locks", "diff", "--cached", "--quiet", at, "--", *paths,
                       codes=(0, 1))
    return paths if code == 0 else None


# How agent-loop's landings mark the entries they add to your branch's reflog.
LANDED_ENTRY = "agent-loop: landed "
# How far back the reflog is read, and how many landings in a row are looked at.
TAIL_BYTES = 65536
CHAIN = 20


def unrecorded(root: Path, git_dir: Path) -> tuple[str, str] | None:
    """A checkout left behind with no record of it (by a version of agent-loop that kept
    none): (the commit its index and files are at, the branch's tip) when your branch's last
    reflog entries are agent-loop's landings, the index file was not written since the last of
    them (its follow writes it) or the run's first look found something staged, and the index
    holds, where the branch differs from one of those landings' starting points, that commit's
    entries. None otherwise; in the common case (nothing staged, the index newer than the last
    landing, or your own last entry) without a process of its own."""
    from agentloop.vcs.git import refs

    found = refs.where(git_dir, git_dir)
    if found is None or found[0] is None or found[1] is None:
        return None
    tip = found[1]
    chain = _landings(git_dir / "logs" / found[0], tip)
    if not chain:
        return None
    try:
        written = os.stat(git_dir / "index").st_mtime
    except OSError:
        return None
    if written >= chain[-1][1] and not _staged_seen(root):
        return None
    git = Git(root)
    # One look first: a checkout that followed holds the landings' files as the tip has them
    # (the index written a moment before the branch moved, by a fast-forward across a second).
    staged = git.code("--no-optional-locks", "diff", "--cached", "--name-only", "-z", tip,
                      codes=(0, 1))[1]
    landed = git.code("diff-tree", "-r", "-z", "--name-only", "--no-commit-id", chain[0][0],
                      tip)[1]
    if not {p for p in staged.split("\0") if p} & {p for p in landed.split("\0") if p}:
        return None
    for old, _ in chain:  # the oldest first: the one the whole lag starts from
        if lags(git, old, tip) is not None:
            return old, tip
    return None


def _staged_seen(root: Path) -> bool:
    """Whether the run's first look at the checkout (its `git status`, started already) found
    anything staged: a checkout behind shows the tasks' files so, even after a `git status` of
    yours rewrote the index once the lock was gone. No first look: no."""
    from agentloop.vcs.git.first_look import peek_status

    out = peek_status(root)
    return out is not None and any(entry.startswith("1 ") and entry[2:3] != "."
                                   for entry in out.split("\0"))


def _landings(log: Path, tip: str) -> list[tuple[str, int]]:
    """The starting points (and times) of the landings in a row that end your branch's reflog
    at `tip`, oldest first; none when its last entry is not one."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL_BYTES))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    chain: list[tuple[str, int]] = []
    want = tip
    for line in reversed(lines[-CHAIN:]):
        head, tab, message = line.partition("\t")
        parts = head.split(" ")
        if not tab or len(parts) < 4 or not message.startswith(LANDED_ENTRY) \
                or parts[1] != want:
            break
        try:
            when = int(parts[-2])
        except ValueError:
            break
        chain.append((parts[0], when))
        want = parts[0]
    chain.reverse()
    return chain
