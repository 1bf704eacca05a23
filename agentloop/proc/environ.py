"""The environment a child is started with, made once: os.environ as a plain mapping, copied
once while it stays the same, and an environment handed to many children encoded once.

Copying os.environ decodes every name and value in Python, some microseconds each, and every
git process starts with a copy; comparing the bytes behind it with the ones last copied is one
comparison of two dicts in C. A change to os.environ (a test's, a library's) is a new copy.
Both ways of starting a child (agentloop.proc.spawn's posix_spawn, and Popen) take an
environment as bytes (`for_child`, `popen_env`) where they would encode each name and value of
a str one again at every start.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

_held: tuple[dict[bytes, bytes], Mapping[str, str]] | None = None


def current() -> Mapping[str, str]:
    """os.environ as it is now, read-only: copy it (`{**current(), ...}`) to change it."""
    global _held
    raw = getattr(os.environ, "_data", None)  # the bytes behind it, where there are (POSIX)
    held = _held
    if held is not None and raw is not None and held[0] == raw:
        return held[1]
    copy = MappingProxyType(dict(os.environ))
    if isinstance(raw, dict):
        _held = (dict(raw), copy)
    return copy


def home_of(environ: Mapping[str, str] | None = None) -> Path:
    """The home folder a child runs with (HOME, as it will read it)."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or Path.home())


# The environments children were started with, by identity, as given and (from its second
# child on) as bytes: a git runner hands the same dict to every command, and posix_spawn would
# encode each of its names and values again each time. An environment seen once (a dict made
# for one command) is only copied: encoding it here would cost more than posix_spawn does.
_envs: dict[int, tuple[Mapping[str, str], dict[str, str], Mapping[bytes, bytes] | None]] = {}


def for_child(environ: Mapping[str, str]) -> Mapping[bytes, bytes] | Mapping[str, str]:
    """`environ` as the child gets it, as bytes when they are at hand."""
    if environ is os.environ:
        raw = getattr(os.environ, "_data", None)  # POSIX keeps the bytes it exports
        return raw if isinstance(raw, dict) else environ
    held = _envs.get(id(environ))
    if held is not None and held[0] is environ and held[1] == environ:
        if held[2] is not None:
            return held[2]
        try:
            encoded = {os.fsencode(k): os.fsencode(v) for k, v in environ.items()}
        except (TypeError, UnicodeError):
            return environ  # posix_spawn says what is wrong with it, as it always did
        _envs[id(environ)] = (environ, held[1], encoded)
        return encoded
    if len(_envs) >= 16:  # one-off dicts go first; a runner's, encoded already, stay
        for key in [key for key, (_, _, encoded) in list(_envs.items()) if encoded is None]:
            _envs.pop(key, None)
        if len(_envs) >= 16:
            _envs.clear()
    _envs[id(environ)] = (environ, dict(environ), None)
    return environ


def popen_env(env: Mapping[str, str] | None) -> Mapping[bytes, bytes] | Mapping[str, str] | None:
    """`env` as Popen is best handed it (an agent started in a lane's folder, which
    posix_spawn cannot start in): None, the child taking ours with nothing encoded, when it
    holds just what os.environ does; else as bytes from its second use on, kept by identity as
    for posix_spawn. Popen encodes each name and value of a str one in Python, every start."""
    if env is None or env is os.environ:
        return None
    if env == current():  # one comparison in C; os.environ keeps the process's own in step
        return None
    given = for_child(env)
    return dict(env) if given is env else given
