"""Reading a small model's answer: the first JSON object in it that has what we asked for,
wherever it sits (code fences, prose around it)."""

from __future__ import annotations

import json
from typing import Any, Callable


def first_object(text: str, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The first JSON object in `text` for which `wanted` is true; None when there is none."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict) and wanted(value):
            return value
        start = text.find("{", start + 1)
    return None
