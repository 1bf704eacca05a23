"""A kept path that is a symbolic link, put back after an agent run that replaced it.

A kept path (agentloop.sandbox.policy `Kept`) is bound read-only inside the sandbox; a link
(settings kept with the user's dotfiles) is bound at its target, as bubblewrap mounts over no
link. The link itself lies in the agent's writable home: the agent can remove it and put a file
of its own there (a settings file with a hook its CLI would run tomorrow, as the user, outside
any sandbox). A link whose target is gone (dangling) has nothing to bind: the agent can write
through it, and where the target would lie in a folder it may write, that makes it. So the
links are noted before every confined run, a task's or a helper call's (`note`), and, once the
sandbox is gone (nothing of the agent's runs on: bubblewrap's PID namespace dies with it), each
one is made as it was (`put_back`): a replaced link put back, a dangling link's target the run
made moved aside; what the agent made is kept beside it, never deleted, under a name the CLI
reads nothing from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from agentloop.files.free_name import free_name
from agentloop.sandbox.policy import Kept

# A link -> (what it names, where that leads when it led nowhere as the run began, else None).
Links = dict[Path, tuple[str, "str | None"]]
# What `put_back` did: (the link, where what the agent made went, or None when it made nothing).
Done = list[tuple[Path, "Path | None"]]


@contextmanager
def held(kept: Sequence[Kept], home: Path, say: Sequence[Callable[[str], None]]) -> Iterator[None]:
    """Around one agent run, once its sandbox is gone: each kept link as it was, in one line
    to each of `say` (the run's console, the run's log)."""
    noted = note(kept)
    try:
        yield
    finally:
        if noted:
            _said(noted, home, say)


def _said(noted: Links, home: Path, say: Sequence[Callable[[str], None]]) -> None:
    try:
        done = put_back(noted)
    except OSError as exc:
        line = (f"sandbox: a link the agent's CLI reads outside the sandbox was changed and "
                f"could not be put back as it was: {exc}")
    else:
        if not done:
            return
        line = put_back_line(done, home)
    for tell in say:
        try:
            tell(line)
        except OSError:
            pass  # the run's log gone (an agent deleted its folder): said elsewhere all the same


def note(kept: Sequence[Kept]) -> Links:
    """Each kept path that is a link now, with what it names, and where a dangling one leads."""
    links: Links = {}
    for path, _text in kept:
        try:
            target = os.readlink(path)
        except OSError:
            continue  # no link (bound read-only itself) or no path
        leads = os.path.realpath(path)
        links[path] = (target, None if os.path.exists(leads) else leads)
    return links


def put_back(links: Links) -> Done:
    """Each noted link as it was: one the agent replaced put back, and a dangling one's target
    the run made (written through the link) moved aside."""
    done: Done = []
    for path, (target, dangling) in links.items():
        try:
            same = os.readlink(path) == target
        except OSError:
            same = False  # removed, or a file or folder of the agent's in its place
        if same:
            if dangling is not None and os.path.lexists(dangling):
                made = free_name(Path(dangling + ".by-agent"))
                os.rename(dangling, made)   # same folder: one rename, never a copy
                done.append((path, made))
            continue
        aside = None
        if os.path.lexists(path):
            aside = free_name(path.with_name(path.name + ".by-agent"))
            os.rename(path, aside)
        os.symlink(target, path)
        done.append((path, aside))
    return done


def put_back_line(done: Done, home: Path) -> str:
    """The one line that says which links were made as they were, and where what the agent
    made went (`~` for `home`)."""
    def shown(path: Path) -> str:
        inside = os.path.relpath(path, home)
        return str(path) if inside.startswith("..") else os.path.join("~", inside)

    parts = [shown(path) + (f" (what the agent put there is in {shown(aside)})" if aside
                            else "") for path, aside in done]
    return ("sandbox: a link the agent's CLI reads outside the sandbox, put back as it was: "
            + "; ".join(parts))
