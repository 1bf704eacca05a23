"""Where HEAD is, and a fresh commit's tree, read straight from the git dir: a few microseconds
where GitPython takes a millisecond or so, and the git backend asks every task. Anything unusual
(reftable, packed objects) is left to GitPython."""

from __future__ import annotations

import os
import time
from pathlib import Path

SHA_LENGTH = 40
# The common git dirs found to keep their refs in files, looked at once each: a run asks a
# dozen times a task. A repository turned to reftable later (`git refs migrate`, which git
# refuses while linked worktrees exist) is caught where the files then fail: the branch is
# not found loose, and the answer is looked for again before it is given.
_in_files: set[str] = set()


def _reftable(common_dir: str | os.PathLike[str]) -> bool:
    """Whether the repository keeps its refs in reftable (files not to be read then)."""
    key = os.fspath(common_dir)
    if key in _in_files:
        return False
    if os.path.isdir(os.path.join(key, "reftable")):
        return True
    _in_files.add(key)
    return False


def _reftable_now(common_dir: str | os.PathLike[str]) -> bool:
    """_reftable, looked at again: what the files did not find may be a reftable's."""
    _in_files.discard(os.fspath(common_dir))
    return _reftable(common_dir)


def where(git_dir: str | os.PathLike[str],
          common_dir: str | os.PathLike[str]) -> tuple[str | None, str | None] | None:
    """(the branch HEAD names, or None when detached; its commit, or None on an unborn
    branch), or None when this cannot be told from the files (reftable, odd contents)."""
    if _reftable(common_dir):
        return None
    try:
        head = _read(os.path.join(git_dir, "HEAD"), line=True).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not head.startswith("ref: "):
        return (None, head) if _is_sha(head) else None
    ref = head[len("ref: "):]
    if not ref.startswith("refs/heads/"):
        return None  # HEAD naming a symbolic ref of its own, or a remote's
    found = _tip(common_dir, ref)
    return None if found is None else (ref, found or None)


def branch_tip(common_dir: str | os.PathLike[str], ref: str) -> str | None:
    """The commit branch `ref` (refs/heads/...) is at; "" when it has none (unborn, or not
    there); None when this cannot be told from the files (reftable, odd contents)."""
    if _reftable(common_dir):
        return None
    return _tip(common_dir, ref)


def _tip(common_dir: str | os.PathLike[str], ref: str) -> str | None:
    # branch_tip once the repository is known to keep its refs in files: where() has looked.
    try:
        sha = _read(os.path.join(common_dir, ref), line=True).strip()
        return sha if _is_sha(sha) else None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        # Not loose: packed, or an unborn branch; or a reftable's now (its `refs/heads` is a
        # file, and HEAD names `refs/heads/.invalid`).
        if _reftable_now(common_dir):
            return None
    except (OSError, UnicodeDecodeError):
        return None
    packed = _packed(common_dir)
    return None if packed is None else packed.get(ref, "")


# packed-refs as last parsed, by common git dir, with the stat it was read at. The stash
# list's ref and an unborn branch are looked for there a few times a task, and a repository
# with many tags has a large one. git writes it whole, to a new file renamed over the old, and
# its own cache of it trusts the same stat; one written within RACY_NS of its read is not
# kept (a coarse clock could give the next one the same times).
_packed_seen: dict[str, tuple[tuple[int, int, int, int, int], dict[str, str]]] = {}
RACY_NS = 3_000_000_000


def _packed(common_dir: str | os.PathLike[str]) -> dict[str, str] | None:
    """The refs packed-refs names, with their commits (none when there is no such file); None
    when it cannot be read."""
    path = os.path.join(common_dir, "packed-refs")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    key = os.fspath(common_dir)
    known = _packed_seen.get(key)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        text = _read(path)  # replaced since the stat: the next look's stat differs
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError):
        return None
    found: dict[str, str] = {}
    for line in text.splitlines():
        sha, _, name = line.partition(" ")
        if _is_sha(sha):
            found.setdefault(name, sha)
    if time.time_ns() - st.st_ctime_ns >= RACY_NS:
        _packed_seen[key] = (stamp, found)
    return found


def any_under(common_dir: str | os.PathLike[str], prefix: str) -> bool | None:
    """Whether any ref's name starts with `prefix` (`refs/agent-loop/landed/`); None when this
    cannot be told from the files (reftable)."""
    if _reftable(common_dir):
        return None
    for _, _, files in os.walk(os.path.join(common_dir, prefix)):
        if files:
            return True  # a loose ref (or a lock of one being written: ask git then)
    if _reftable_now(common_dir):
        return None
    try:
        packed = _read(os.path.join(common_dir, "packed-refs"))
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return None
    return any(line.partition(" ")[2].startswith(prefix) for line in packed.splitlines())


def _read(path: str, line: bool = False) -> str:
    """The file's text; `line`: a file git writes as one line (HEAD, a loose ref), whose first
    read is all of it when it ends that line (no second read to see the end)."""
    # Raw reads: a text file object costs ten times the read itself, and HEAD is read every task.
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            if line and len(chunks) == 1 and chunk.endswith(b"\n"):
                break
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def _is_sha(text: str) -> bool:
    return len(text) == SHA_LENGTH and not text.strip("0123456789abcdef")


def tree_of(common_dir: Path, commit: str) -> str | None:
    """The tree of `commit` when it is a loose object (as a commit just made is) or was read
    as one a moment ago, else None."""
    lines = _commit_lines(common_dir, commit)
    if lines is None or not lines[0].startswith(b"tree "):
        return None
    tree = lines[0][5:45].decode("ascii", "replace")
    return tree if _is_sha(tree) else None


def parent_of(common_dir: Path, commit: str) -> str | None:
    """The one parent of `commit` when it is a loose object (as a commit just made is) with
    exactly one, else None (a merge, a root commit, or one that cannot be read so)."""
    # "tree <sha>\nparent <sha>\n" and the start of the line after it.
    lines = _commit_lines(common_dir, commit)
    if lines is None or len(lines) < 3 or not lines[1].startswith(b"parent ") or \
            lines[2].startswith(b"parent"):
        return None
    parent = lines[1][7:].decode("ascii", "replace")
    return parent if _is_sha(parent) else None


# The first lines of the last few commits read: a task's commit is read for its tree as it is
# made and for its parent when the history is checked. A commit's text never changes (its
# name is its text's hash), so what was read once holds, packed since or not.
_commits: dict[str, list[bytes]] = {}
KEPT_COMMITS = 8
HEAD_SIZE = 160  # of the object: its header ("commit <size>\0"), a tree line and a parent line


def _commit_lines(common_dir: Path, commit: str) -> list[bytes] | None:
    """The first lines of a loose commit object's text (from its first HEAD_SIZE bytes, the
    header left out); None when `commit` is no loose commit."""
    known = _commits.get(commit)
    if known is not None:
        return known
    if not _is_sha(commit):
        return None
    import zlib  # a commit's own lines only: --status reads refs alone

    try:
        raw = (common_dir / "objects" / commit[:2] / commit[2:]).read_bytes()
        head = zlib.decompressobj().decompress(raw, HEAD_SIZE)
    except (OSError, zlib.error):
        return None
    if not head.startswith(b"commit "):
        return None
    lines = head.partition(b"\0")[2].split(b"\n")
    if len(_commits) >= KEPT_COMMITS:
        _commits.clear()  # only the last few are asked for again
    _commits[commit] = lines
    return lines


def worktree_git_dir(worktree: Path) -> Path | None:
    """A linked worktree's own git dir, read from its `.git` file ("gitdir: ..."); None when
    the file does not say (missing, a folder, odd contents): then ask git."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: "):
        return None
    # git writes it absolute, or relative to the worktree (worktree.useRelativePaths).
    found = (worktree / text[len("gitdir: "):]).resolve()
    return found if found.is_dir() else None


def commondir_damage(own: Path, common: Path) -> str | None:
    """What a linked worktree's own git dir `own` (under `common`/worktrees/) says in its
    `commondir` when that no longer names `common`, the repository's git dir (rewritten, or
    emptied: git then takes the worktree for no repository at all); None when it does, or when
    `own` is not a worktree's folder of `common`. A look only."""
    file = own / "commondir"
    try:
        text = file.read_text(encoding="utf-8", errors="replace").strip()
        # As git writes it, in the folder git made (no symlink in its place or its parent's):
        # `own/../..` is `common` itself, told by two lstats instead of four realpaths, a
        # stat of each folder of each path, at every task's check.
        if text == "../.." and own.parent == common / "worktrees" and own.name != ".." and \
                not own.is_symlink() and not own.parent.is_symlink():
            return None
        if own.resolve().parent != (common / "worktrees").resolve():
            return None
    except OSError:
        return None
    if text and (own / text).resolve() == common.resolve():
        return None
    return text


def commondir_mended(own: Path, common: Path) -> str | None:
    """A damaged `commondir` (commondir_damage: what it said, returned) written back as git
    writes it (`../..`); None, nothing written, when it was whole."""
    text = commondir_damage(own, common)
    if text is None:
        return None
    file = own / "commondir"
    # An agent's symlink there (to a file of yours) is replaced, never written through.
    if file.is_symlink():
        file.unlink()
    file.write_text("../..\n")
    return text


def commondir_said(text: str, was: bool = False) -> str:
    """What a damaged commondir held, in the run's words (commondir_damage's answer)."""
    if not text:
        return "was empty" if was else "is empty"
    return f"{'named' if was else 'names'} {text!r}"


def no_linked_worktrees(git_dir: Path) -> bool:
    """Whether the repository whose main git dir is `git_dir` has no linked worktree: git keeps
    one folder each under `worktrees/` (and removes that folder with the last of them). False
    when the files cannot tell."""
    try:
        with os.scandir(git_dir / "worktrees") as entries:
            return next(entries, None) is None
    except FileNotFoundError:
        return True
    except OSError:
        return False


def healthy_worktree(worktree: Path) -> bool:
    """Whether the linked worktree at `worktree` is registered, there and not locked, as `git
    worktree list` would say (no `prunable`, no `locked`), read from its `.git` file and its
    folder in the repository. False when unsure."""
    own = worktree_git_dir(worktree)
    if own is None or own.parent.name != "worktrees" or (own / "locked").exists():
        return False
    try:
        # The worktree's own `gitdir` file names where git thinks it is: here, or it is not ours.
        told = Path((own / "gitdir").read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        return False
    return (own / told if not told.is_absolute() else told).resolve() == \
        (worktree / ".git").resolve()
