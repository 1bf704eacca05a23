"""git: the record a landing keeps in the git dir until your checkout has followed the branch,
and the next run's finishing of a landing a kill cut short.

The record is "<old> <new>": the branch moved (or is about to move) from `old` to the landing's
`new`, and the checkout is to follow. A third word, `behind`, says a lock on the checkout's index
held the follow off (agentloop.vcs.git.behind). A record whose `new` git no longer has is a
landing that never reached your branch (agentloop.vcs.git.pruned): it goes, and its task lands
again.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.vcs.git import behind, pruned
from agentloop.vcs.git.behind import BEHIND, RECORD
from agentloop.vcs.git.landing_copy import changed_files
from agentloop.vcs.git.run import Git


def finish_landing(root: Path, git_dir: Path) -> str | None:
    """A landing a kill cut short after the branch moved and before the checkout followed: the
    checkout follows now (the files the commit changed, nothing else); or (a fast-forward's)
    after the checkout followed and before the branch moved: the branch moves now; or (a
    fast-forward's) after it wrote some of the commit's files and before its index: the branch
    moves and the checkout follows now. A note, or None; a record of a landing whose commit was
    pruned before the branch moved goes, said in the note (VcsError when the repository's own
    objects are missing too: damaged, not pruned)."""
    git = Git(root)
    record = git_dir / RECORD
    try:
        old, new, *mark = record.read_text().split()
    except FileNotFoundError:
        return _follow_unrecorded(root, git_dir)
    except (OSError, ValueError):
        return None
    if pruned.missing(git, new):
        return _pruned_dropped(git, record, old, new)
    note = None
    head = git.code("rev-parse", "-q", "--verify", "HEAD", codes=(0, 1))[1].strip()
    index_old = git.code("diff", "--cached", "--quiet", old, codes=(0, 1))[0] == 0
    written = head == old and index_old and _half_written(git, root, old, new)
    if written:
        # `git merge --ff-only` writes the files, then its index, then moves the branch: cut
        # short in between, the commit's files stood in the checkout as untracked or modified
        # ones, and its landing waited on them as on your edits (for the lane-wait, 600 s).
        # Nothing else is in them: the branch moves, and the checkout follows as below.
        git.code("update-ref", "-m", f"agent-loop: landed {new[:12]}", "HEAD", new, old)
        head = new
    # Behind since a lock held a landing's follow off (agentloop.vcs.git.behind): the index
    # holds `old` where the branch differs, your staged edits elsewhere.
    lagging = head == new and (mark == [BEHIND] or not index_old) \
        and behind.lags(git, old, new) is not None
    if head == new and (index_old or lagging):
        code, _ = git.code("read-tree", "-m", "-u", old, new, codes=(0, 128))
        if code and lagging and not _half_written(git, root, old, new):
            # Not a follow cut short: your own file stands in the way on a path it changes.
            record.unlink(missing_ok=True)
            return behind.repair(root, git_dir, old, new, in_the_way=True)
        if code:  # cut short halfway through its files: they are the commit's, set them so
            _files_set(git, root, old, new)
        note = (f"a landing was cut short as it wrote the task's files into the checkout; the "
                f"branch and the checkout follow now ({new[:12]})" if written else
                f"your checkout was behind its branch (a lock on its index held a landing's "
                f"follow off); it follows now ({new[:12]}), your edits kept" if lagging else
                f"a landing was cut short before the checkout followed the branch; it follows "
                f"now ({new[:12]})")
    elif head == old and not index_old \
            and git.code("diff", "--cached", "--quiet", new, codes=(0, 1))[0] == 0:
        git.code("update-ref", "-m", f"agent-loop: landed {new[:12]}", "HEAD", new, old)
        note = (f"a landing was cut short after the checkout took the task's files; the branch "
                f"follows now ({new[:12]})")
    record.unlink(missing_ok=True)
    return note


def _pruned_dropped(git: Git, record: Path, old: str, new: str) -> str:
    """The record of a landing whose commit `new` git no longer has, dropped: its objects, named
    by no ref yet, pruned under it (a `git gc --prune=now`), so the branch never moved to it and
    the landing's task, not saved as landed, lands again. VcsError, the record kept and nothing
    moved, when the repository lacks its own objects too: damaged, no gc's doing."""
    lacking = pruned.missing(git, "HEAD", old)
    if lacking:
        raise pruned.damaged(lacking)
    record.unlink(missing_ok=True)
    return (f"a landing ({new[:12]}) never reached your branch: a `git gc --prune=now` "
            "removed the commit it had just made; its record is dropped and its task lands "
            "again")


def _files_set(git: Git, root: Path, old: str, new: str) -> None:
    """The files the landing of `new` over `old` changes, set in the checkout as `new` has them
    (a follow cut short halfway through them): written, or removed where `new` has none."""
    for path in changed_files(root, old, new):
        there = git.code("cat-file", "-e", f"{new}:{path}", codes=(0, 1, 128))[0] == 0
        if there:
            git.code("checkout", new, "--", path)
        else:
            git.code("rm", "-q", "-f", "--ignore-unmatch", "--", path)


def _follow_unrecorded(root: Path, git_dir: Path) -> str | None:
    """A checkout an earlier version left behind its branch with no record of it
    (agentloop.vcs.git.behind.unrecorded) follows now, your edits kept; a note, or None."""
    found = behind.unrecorded(root, git_dir)
    if found is None:
        return None
    at, tip = found
    code, _ = Git(root).code("read-tree", "-m", "-u", at, tip, codes=(0, 128))
    if code:
        return behind.repair(root, git_dir, at, tip, in_the_way=True)
    return (f"your checkout was behind its branch since {at[:12]} (a landing's follow that a "
            f"lock on its index held off); it follows now ({tip[:12]}), your edits kept")


def _half_written(git: Git, root: Path, old: str, new: str) -> bool:
    """Whether the checkout holds some of the paths `new` changes from `old` as `new` has them
    and every other one as `old` has it: what a fast-forward cut short leaves, and nobody's
    edit (a file of any other content, or a folder: False). A path reached through a link to
    a folder reads as missing, as git's side of a path added or deleted does."""
    out = git.code("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new)[1]
    fields = out.split("\0")
    some = False
    for head, path in zip(fields[0::2], fields[1::2]):
        parts = head.lstrip(":").split()
        if len(parts) < 4 or not path:
            return False
        before, after = (parts[0], parts[2]), (parts[1], parts[3])
        here = _entry(root, path)
        if here == after != before:
            some = True
        elif here != before:
            return False
    return some


def _entry(root: Path, path: str) -> tuple[str, str] | None:
    """The checkout's `path` as a tree entry (mode, blob sha) of its bytes as they are; git's
    zeros when it is missing; None for anything no blob is (a folder, a fifo)."""
    from agentloop.files.digest import sha1
    from agentloop.vcs.git.files import MISSING, state_of

    state = state_of(root, path)
    if state == MISSING:
        return "000000", "0" * 40
    if state.startswith("link:"):
        target = os.fsencode(state[len("link:"):])
        return "120000", sha1(b"blob %d\0" % len(target) + target).hexdigest()
    mode, _, sha = state.partition(":")
    return (mode, sha) if sha else None
