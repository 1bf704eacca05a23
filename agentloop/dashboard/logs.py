"""A task's log a page at a time, and a search through it: a log can be 100 MB, and neither the
server nor the browser ever holds it whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PAGE = 64 * 1024          # bytes a page holds, about a screenful of a busy agent's minutes
SEARCH_CHUNK = 1 << 20    # bytes read at a time while searching
MAX_HITS = 100
LINE_CAP = 400            # a search hit shows this much of its line


def page(path: Path, offset: int) -> dict[str, Any]:
    """The whole lines of the page at `offset` (-1: the last page), with the offsets of the
    pages before and after it (None at either end) and the file's size."""
    with open(path, "rb") as log:
        size = log.seek(0, 2)
        if offset < 0:
            offset = max(0, size - PAGE)
        offset = min(offset, size)
        if offset:  # start at a line's beginning
            log.seek(offset - 1)
            offset += len(log.readline()) - 1
        log.seek(offset)
        data = log.read(PAGE)
        if offset + len(data) < size and b"\n" in data:
            data = data[:data.rfind(b"\n") + 1]
    end = offset + len(data)
    text = data.decode("utf-8", "replace")
    return {"offset": offset, "size": size, "lines": text.splitlines(),
            "before": max(0, offset - PAGE) if offset else None,
            "after": end if end < size else None}


def search(path: Path, query: str) -> dict[str, Any]:
    """Where `query` occurs (any case): each hit's line offset and the line, at most MAX_HITS."""
    needle = query.lower().encode("utf-8")
    hits: list[dict[str, Any]] = []
    if not needle:
        return {"hits": hits, "more": False}
    with open(path, "rb") as log:
        base, carry = 0, b""  # carry: the unfinished last line of the chunk before
        while len(hits) <= MAX_HITS:
            chunk = log.read(SEARCH_CHUNK)
            if not chunk:
                lines, carry = [carry] if carry else [], b""
            else:
                block = carry + chunk
                cut = block.rfind(b"\n") + 1
                lines, carry = block[:cut].splitlines(keepends=True), block[cut:]
            for line in lines:
                if needle in line.lower():
                    hits.append({"offset": base, "line": line[:LINE_CAP].decode(
                        "utf-8", "replace").rstrip("\n")})
                base += len(line)
            if not chunk:
                break
    return {"hits": hits[:MAX_HITS], "more": len(hits) > MAX_HITS}
