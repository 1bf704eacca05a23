"""--show-settings: every effective setting and where it came from, like
`git config --show-origin`; as text or as JSON."""

from __future__ import annotations

from typing import Any

from agentloop.settings.merge import Settings
from agentloop.settings.schema import show


def text(settings: Settings) -> str:
    """One line per key: origin, then `key = value` as a settings file would write it."""
    width = max(len(str(r.origin)) for r in settings.rows)
    lines = [f"{str(r.origin):<{width}}  {r.key} = {show(r.value)}" for r in settings.rows]
    read = ", ".join(settings.files) if settings.files else "none"
    return "\n".join([*lines, f"# settings files read (lowest precedence first): {read}",
                      f"# this plan's table: [plans.{show(settings.plan)}]"])


def as_json(settings: Settings) -> dict[str, Any]:
    """The same, as data: {"settings": [{key, value, origin: {kind, name, line}}], ...}."""
    return {
        "settings": [{"key": r.key, "value": _plain(r.value, r.kind),
                      "origin": {"kind": r.origin.kind, "name": r.origin.name or None,
                                 "line": r.origin.line}}
                     for r in settings.rows],
        "files": list(settings.files),
        "plan": settings.plan,
    }


def _plain(value: Any, kind: str) -> Any:
    """A value as JSON: a table as an object, a list as a list."""
    if kind == "table":
        return dict(value)
    return list(value) if kind == "list" else value
