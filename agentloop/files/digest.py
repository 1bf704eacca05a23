"""SHA-256 and SHA-1 as CPython's own modules compute them, not OpenSSL's: hashlib loads and starts
OpenSSL on import (about 11 million instructions, a sixth of what `--status` takes beyond the
interpreter's own start, and as much again of a short run's), and what is hashed here (a task
file, a task's text, a plan's path, a list of change ids, a changed file's blob) is too short for
OpenSSL's speed to win that back. The digests are the same bytes either way."""

from __future__ import annotations

try:
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]  # up to 3.11
except ImportError:  # pragma: no cover - the module's name since Python 3.12
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # a Python built without its own hashes (some FIPS builds)
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]
try:
    from _sha1 import sha1  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - a Python built without its own hashes
    from hashlib import sha1  # type: ignore[assignment,unused-ignore]

__all__ = ["hexdigest", "sha1", "sha256"]  # the constructors, for a digest fed in parts


def hexdigest(data: bytes) -> str:
    """The SHA-256 of `data`, in hex."""
    return str(sha256(data).hexdigest())
