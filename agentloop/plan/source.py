"""A task file as bytes: read, hashed as the state records it, the version of the reader that
reads it, and the slug of a name. That is all it takes to tell the plan a state holds from a
changed one, so `--status` and a run with nothing new to read never load the parser
(agentloop.plan.parse, which takes these names from here) nor its records.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentloop.errors import TaskFileError
from agentloop.files import digest
from agentloop.files.shown import shown as shown

# The reading's version: one more whenever the same file reads differently (2: legends are
# notes, numbered sub-tasks fold; 3: a checklist with every box ticked is still a checklist;
# 4: an optional sub-task is a task of its own, a ticked task with an open sub-task is to do;
# 5: an empty box `- []` is an open task, a code fence never closed over tasks is warned of). A
# state saved by an earlier reader is matched to the new reading (agentloop.state.project), as
# if the file had changed.
READER = 5
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


class Read:
    """A task file read and hashed, not parsed yet: a run whose state holds this very file
    (its hash) never parses it (agentloop.state.project.load_plan). A plain class, not a
    dataclass: `--status` imports this module, and no dataclasses."""

    __slots__ = ("path", "data", "sha256")

    def __init__(self, path: Path, data: bytes, sha256: str) -> None:
        self.path = path
        self.data = data
        self.sha256 = sha256     # as TaskFile.sha256


def file_hash(data: bytes) -> str:
    """The hash recorded in the state: "sha256:" and the hex digest of the file's bytes."""
    return "sha256:" + digest.hexdigest(data)


def read(path: Path) -> Read:
    """Read and hash the task file at `path`; TaskFileError if it cannot be read."""
    data = read_bytes(path)
    return Read(path, data, file_hash(data))


def read_bytes(path: Path) -> bytes:
    """The task file's raw bytes (for hashing); TaskFileError if missing, a folder, unreadable."""
    if path.is_dir():
        raise TaskFileError(f"task file {shown(path)} is a directory, not a file")
    try:
        return path.read_bytes()
    except FileNotFoundError as e:
        raise TaskFileError(f"task file {shown(path)} does not exist") from e
    except OSError as e:
        raise TaskFileError(f"cannot read task file {shown(path)}: {e.strerror}") from e


def slug(text: str, limit: int) -> str:
    """`text` as at most `limit` characters of `[a-z0-9-]`, cut between words; "" if none left."""
    folded = text.casefold()
    if not folded.isascii():  # NFKD changes no ASCII text: the module loads for the others
        import unicodedata

        folded = unicodedata.normalize("NFKD", folded).encode("ascii", "ignore").decode("ascii")
    dashed = _NOT_SLUG.sub("-", folded.lower()).strip("-")
    if len(dashed) <= limit:
        return dashed
    cut = dashed.rfind("-", 0, limit + 1)
    return dashed[: cut if cut >= limit // 2 else limit].rstrip("-")
