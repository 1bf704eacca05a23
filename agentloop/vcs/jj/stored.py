"""What jj's own files say, read without a jj process (none on the way to a run's first agent):
a workspace's name, and where the repository's workspaces are. jj writes both as protobuf
messages; a file that is not there or not as expected says nothing (None), and the caller goes
on as it would without it."""

from __future__ import annotations

from pathlib import Path


def workspace_name(root: Path) -> str | None:
    """The name of the jj workspace at `root` (field 3 of `.jj/working_copy/checkout`)."""
    try:
        fields = _strings((root / ".jj" / "working_copy" / "checkout").read_bytes())
    except (OSError, ValueError):
        return None
    names = [value for number, value in fields if number == 3]
    return names[0].decode("utf-8", "surrogateescape") if names and names[0] else None


def workspace_folders(root: Path) -> dict[str, Path] | None:
    """The repository's workspaces by name, each with its folder, as the repository of the
    workspace at `root` records them (`.jj/repo/workspace_store/index`: entries of field 1,
    each a name (1) and a folder relative to the repository's `.jj/repo` (2))."""
    link = root / ".jj" / "repo"
    try:
        repo = (root / ".jj" / link.read_text(encoding="utf-8").strip()).resolve() \
            if link.is_file() else link
        entries = _strings((repo / "workspace_store" / "index").read_bytes())
        found = {}
        for number, entry in entries:
            if number != 1:
                continue
            parts = dict(_strings(entry))
            name, folder = parts.get(1), parts.get(2)
            if name is None or folder is None:
                return None
            found[name.decode("utf-8", "surrogateescape")] = \
                repo / folder.decode("utf-8", "surrogateescape")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return found


def _strings(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of one protobuf message: (field number, bytes); ValueError
    where the bytes are no message."""
    out, at = [], 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while at < len(data):
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value
        raise ValueError("cut short")

    while at < len(data):
        tag = varint()
        if tag & 7 == 0:
            varint()
        elif tag & 7 == 2:
            size = varint()
            if at + size > len(data):
                raise ValueError("cut short")
            out.append((tag >> 3, data[at:at + size]))
            at += size
        else:
            raise ValueError(f"wire type {tag & 7}")
    return out
