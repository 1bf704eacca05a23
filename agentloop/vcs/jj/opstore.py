"""jj's operations read off its operation store's files, with no process: which operation the
repository is at (op_head), and whether the operations since one were only agent-loop's own
forgets of its lanes' workspaces (forgets_since). A run marks where the history stood at its
last look (agentloop.vcs.history), then forgets its last lane: `--status` tells that from an
operation of yours without starting jj.

An operation is a protocol buffer (jj's op_store.proto): its parents are field 2, its metadata
field 3, whose description is field 3. Whatever does not read so (another format of jj's, a
damaged file) answers "cannot tell", and the caller asks jj, as before. Only the standard
library: `--status` imports this module."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.vcs import JJ_PREFIX

# How jj describes the operation of `jj workspace forget` (one name, or several).
FORGET = ("forget workspace ", "forget workspaces ")
# Forgets followed back at most: a run forgets its last lane; a parallel run's lanes, one each.
MOST = 16


def op_head(root: Path) -> str | None:
    """Which operation the repository of the workspace at `root` is at, read off the one file
    name in its op heads folder (no process); None when that is not one name. In a repository
    colocated with git, git's HEAD is part of it: jj takes in what git did at its next command,
    so a `git reset` is caught before that command is taken for one of ours."""
    try:
        repo = _repo(root)
        heads = os.listdir(repo / "op_heads" / "heads")
        git_head = (root / ".git" / "HEAD").read_bytes() if (root / ".git").is_dir() else b""
    except OSError:
        return None
    return f"{heads[0]} {git_head.strip().decode(errors='replace')}" if len(heads) == 1 else None


def op_id(root: Path) -> str | None:
    """The id of the operation the repository is at, read off its op heads (op_head, no
    process); None when that is not one name."""
    head = op_head(root)
    return head.split(" ", 1)[0] if head is not None else None


def _repo(root: Path) -> Path:
    """The repository folder of the workspace at `root` (a lane's names its own in a file)."""
    repo = root / ".jj" / "repo"
    if repo.is_file():
        repo = repo.parent / repo.read_text().strip()
    return repo


def forgotten_by(description: str) -> list[str]:
    """The workspaces an operation described so forgot (none: not a forget)."""
    for prefix in sorted(FORGET, key=len, reverse=True):
        if description.startswith(prefix):
            return [n.strip() for n in description[len(prefix):].split(",") if n.strip()]
    return []


def forgets_since(root: Path, op: str, since: str) -> bool:
    """Whether operation `op` of the repository at `root` is `since`, or follows it by
    agent-loop's forgets of its lanes' workspaces alone (one parent each): a forget drops that
    workspace's @ and nothing below yours. False when the files cannot say so."""
    try:
        store = _repo(root) / "op_store" / "operations"
        for _ in range(MOST):
            if op == since:
                return True
            parents, description = _read(store / op)
            names = forgotten_by(description)
            if len(parents) != 1 or not names or not all(n.startswith(JJ_PREFIX) for n in names):
                return False
            op = parents[0]
    except (OSError, ValueError):
        return False
    return op == since


def _read(path: Path) -> tuple[list[str], str]:
    """An operation's parents (hex ids) and description; ValueError when it does not read as
    one."""
    parents, description = [], ""
    for number, value in _fields(path.read_bytes()):
        if number == 2 and isinstance(value, bytes):
            parents.append(value.hex())
        elif number == 3 and isinstance(value, bytes):
            for inner, text in _fields(value):
                if inner == 3 and isinstance(text, bytes):
                    description = text.decode()
    return parents, description


def _fields(data: bytes) -> list[tuple[int, bytes | int]]:
    """A protocol buffer message's fields, in order: (number, bytes or an integer)."""
    fields: list[tuple[int, bytes | int]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        wire = key & 7
        value: bytes | int
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ValueError("a field runs past the end")
            value, at = data[at:at + size], at + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = data[at:at + size], at + size
        else:
            raise ValueError(f"wire type {wire}")
        fields.append((key >> 3, value))
    return fields


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """The variable-length integer at `at`, and where what follows it begins."""
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a number runs past the end")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at
