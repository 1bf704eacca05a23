"""JSON for everything agent-loop writes (state, journal, events): orjson, and text that is not
UTF-8 written so it can be.

A file name that is not UTF-8 reaches us as a string with surrogates (os.fsdecode's way of
carrying the odd bytes), and orjson refuses those. Such a string is written with its odd bytes
as `\\xNN`: what a person reading the state sees, and never a crash after the work is done.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

import orjson


def dumps(value: Any, option: int = 0) -> bytes:
    """orjson.dumps, with strings that are not UTF-8 shown byte by byte instead of refused."""
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        return orjson.dumps(_readable(value), option=option)


def _readable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _readable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {_readable(k): _readable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_readable(v) for v in value]
    return value
