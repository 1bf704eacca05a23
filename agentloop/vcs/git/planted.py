"""git: your repository's settings (`.git/config`) and hooks folder (`.git/hooks`) changed while
a lane's agent ran. An agent working without --sandbox can set a program there (a hook,
`core.fsmonitor`, `core.sshCommand`, a filter): agent-loop's own git runs none of the hooks or
the fsmonitor (agentloop.vcs.git.run.GUARD), but your own git would, long after the run. The
step says what changed and the way back, kept in the task's record; never a stop, since nothing
of the task's depends on it and a stop would not take it back (you may have changed it too).

Looked at from files, no process: the config's size and time, and its text kept to tell which
settings changed; the hooks folder's entries other than git's `.sample` files."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.files.shown import typed
from agentloop.files.stamp import stat_or_none
from agentloop.ondemand import dataclass
from agentloop.vcs.breach import Breach, Kind

SAMPLE = ".sample"   # what `git init` puts in the hooks folder: never run
# What was said last of each repository (its common dir): the repository as it was then.
# Lanes working at once each began before the write: the first to look says it, the others
# find it as it was said and say nothing again.
_told: dict[Path, Settings] = {}


@dataclass(frozen=True)
class Settings:
    """The config file and the hooks folder as a step found them."""

    config: tuple[int, int] | None          # (size, modification time); None: no file
    text: bytes                             # the config's text then
    hooks: tuple[tuple[str, int, int], ...]  # (name, size, modification time) of each hook


def look(common: Path) -> Settings:
    """The repository's config and hooks now (`common`: its common git dir)."""
    config = _stat(common / "config")
    try:
        text = (common / "config").read_bytes() if config is not None else b""
    except OSError:
        text = b""
    return Settings(config, text, _hooks(common / "hooks"))


def _stat(path: Path) -> tuple[int, int] | None:
    found = stat_or_none(path)
    return (found.st_size, found.st_mtime_ns) if found is not None else None


def _hooks(folder: Path) -> tuple[tuple[str, int, int], ...]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return ()
    found = []
    for entry in entries:
        if entry.name.endswith(SAMPLE):
            continue
        try:
            got = entry.stat()
        except OSError:
            continue
        found.append((entry.name, got.st_size, got.st_mtime_ns))
    return tuple(sorted(found))


def changed(common: Path, root: Path, before: Settings,
            who: str = "this lane's agent") -> Breach | None:
    """What changed in the config and the hooks folder since `before`, while `who` ran, as one
    line with the way back (`root`: your checkout, where the commands run); None when nothing
    did (a config written again with the same settings is unchanged)."""
    config = _stat(common / "config")
    hooks = _hooks(common / "hooks")
    if config == before.config and hooks == before.hooks:
        return None   # the usual case: a stat and a listing
    told = _told.get(common)
    parts: list[str] = []
    commands: list[str] = []
    text = before.text
    if config != before.config:
        try:
            text = (common / "config").read_bytes()
        except OSError:
            text = b""
        if told is None or settings(text) != settings(told.text):
            _settings_changed(before.text, text, root, common, parts, commands)
    if hooks != before.hooks and (told is None or hooks != told.hooks):
        _hooks_changed(before.hooks, hooks, common / "hooks", parts, commands)
    if not parts:
        return None
    _told[common] = Settings(config, text, hooks)
    return Breach(Kind.GIT_SETTINGS, f"{'; '.join(parts)} while {who} ran (an agent writing "
                  "outside its working copy, or you), and your own git runs what they name "
                  "(agent-loop's runs no hook or fsmonitor)", tuple(commands[:4]), stops=False)


def _settings_changed(old: bytes, new: bytes, root: Path, common: Path, parts: list[str],
                      commands: list[str]) -> None:
    was, now = settings(old), settings(new)
    added = [s for s in now if s not in was]
    gone = [s for s in was if s not in now]
    if not added and not gone:
        return
    file = common / "config"
    said = [f"{k} set to {_shown(v)}" for k, v in added[:3]] + \
        [f"{k} = {_shown(v)} removed" for k, v in gone[:3] if k not in dict(added)]
    more = len(added) + len(gone) - len(said)
    parts.append(f"your repository's git settings {file} changed ({', '.join(said)}"
                 + (f" and {more} more" if more > 0 else "") + ")")
    git = f"git -C {typed(root)} config"
    for key in dict.fromkeys(k for k, _ in added):
        commands.append(f"{git} --unset-all {key}")
    for key, value in gone:
        commands.append(f"{git} --add {key} {typed(value)}")


def _shown(value: str) -> str:
    return f"`{value[:80]}{'…' if len(value) > 80 else ''}`"


def _hooks_changed(old: tuple[tuple[str, int, int], ...], new: tuple[tuple[str, int, int], ...],
                   folder: Path, parts: list[str], commands: list[str]) -> None:
    was = {name: rest for name, *rest in old}
    now = {name: rest for name, *rest in new}
    written = [n for n in now if was.get(n) != now[n]]
    deleted = [n for n in was if n not in now]
    said = [f"{n} {'added' if n not in was else 'rewritten'}" for n in written] + \
        [f"{n} deleted" for n in deleted]
    if not said:
        return
    parts.append(f"your repository's git hooks {folder} changed ({', '.join(said[:5])})")
    for name in written:
        path = typed(folder / name)
        commands.append(f"rm {path}" if name not in was else f"cat {path}")


def settings(text: bytes) -> list[tuple[str, str]]:
    """A git config file's settings in order, as (section[.subsection].key, value) with the
    names as git compares them; the value as written (quotes and all). Enough to tell what
    changed, not a full reader: a line it cannot read is taken whole."""
    found: list[tuple[str, str]] = []
    section = ""
    pending = ""
    for raw in text.decode("utf-8", "surrogateescape").splitlines():
        line = pending + raw.strip()
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head, _, rest = line[1:].partition("]")
            name, _, sub = head.partition(" ")
            section = name.lower() + (f".{sub.strip().strip(chr(34))}" if sub else "")
            line = rest.strip()
            if not line or line[0] in "#;":
                continue
        key, eq, value = line.partition("=")
        found.append((f"{section}.{key.strip().lower()}", value.strip() if eq else "true"))
    return found
