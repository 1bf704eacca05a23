"""A kept path that is a symbolic link, put back after an agent run that replaced it.

A kept path (agentloop.sandbox.policy `Kept`) is bound read-only inside the sandbox; a link
(settings kept with the user's dotfiles) is bound at its target, as bubblewrap mounts over no
link. The link itself lies in the agent's writable home: the agent can remove it and put a file
of its own there (a settings file with a hook its CLI would run tomorrow, as the user, outside
any sandbox). So the links are noted before the run (`note`) and, once the sandbox is gone
(nothing of the agent's runs on: bubblewrap's PID namespace dies with it), each replaced one is
put back (`put_back`), the agent's file moved beside it (kept, never deleted) under a name the
CLI reads nothing from.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agentloop.files.free_name import free_name
from agentloop.sandbox.policy import Kept

Links = dict[Path, str]


def note(kept: Sequence[Kept]) -> Links:
    """Each kept path that is a link now, with what it names."""
    links = {}
    for path, _text in kept:
        try:
            links[path] = os.readlink(path)
        except OSError:
            continue  # no link (bound read-only itself) or no path
    return links


def put_back(links: Links) -> list[tuple[Path, Path | None]]:
    """Each noted link the agent replaced, put back: (the link, where the agent's own went, or
    None when there was nothing in its place)."""
    done: list[tuple[Path, Path | None]] = []
    for path, target in links.items():
        try:
            if os.readlink(path) == target:
                continue
        except OSError:
            pass  # removed, or a file or folder of the agent's in its place
        aside = None
        if os.path.lexists(path):
            aside = free_name(path.with_name(path.name + ".by-agent"))
            os.rename(path, aside)   # same folder: one rename, never a copy
        os.symlink(target, path)
        done.append((path, aside))
    return done


def put_back_line(done: list[tuple[Path, Path | None]]) -> str:
    """The one line that says which links were put back, and where the agent's own went."""
    parts = [f"{path}" + (f" (the agent's own moved to {aside})" if aside else "")
             for path, aside in done]
    return ("--sandbox: the agent replaced a link its CLI reads as configuration later, outside "
            "the sandbox; put back: " + "; ".join(parts))
