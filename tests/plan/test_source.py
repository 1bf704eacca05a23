"""plan/source.py: a task file's recorded hash is its SHA-256, whichever module computes it."""

from __future__ import annotations

import hashlib

import pytest

from agentloop.files import digest
from agentloop.plan import source


@pytest.mark.parametrize("data", [b"", b"- one\n", "- \u00e9t\u00e9\n".encode() * 5000])
def test_the_hash_is_the_sha256_of_the_file_s_bytes(data: bytes) -> None:
    assert source.file_hash(data) == "sha256:" + hashlib.sha256(data).hexdigest()
    assert digest.hexdigest(data) == hashlib.sha256(data).hexdigest()
