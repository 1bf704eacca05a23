"""--report FILE: the dashboard as one standalone HTML file (no network, nothing else to fetch)
holding the plan's state and the events of its runs, for a pull request or a CI artifact."""

from __future__ import annotations

import os
import stat
from collections import deque
from pathlib import Path
from typing import Any

from agentloop.dashboard import page, sources
from agentloop.errors import AgentLoopError
from agentloop.files import jsonbytes
from agentloop.state.project import Project

MAX_EVENTS = 20_000   # the newest events kept: a report stays a file a browser opens at once


def html(project: Project) -> tuple[str, str]:
    """The report of `project`'s plan as one HTML page, and what it holds in a few words."""
    state = project.store.load()
    if state is None:
        raise AgentLoopError(f"{project.task_file_name} has not run yet: there is nothing to "
                             "report")
    key = project.store.dir.relative_to(project.store.base).as_posix()
    view = sources.state_view(key, state)
    data = {"plans": [{"view": view, "events": _events(project.store.events)}]}
    page_html = page.report(f"agent-loop: {state.task_file}", jsonbytes.dumps(data))
    return page_html, f"{len(state.tasks)} tasks, {len(data['plans'][0]['events'])} events"


def write(project: Project, target: Path, shown: str) -> str:
    """Write the report of `project`'s plan to `target` (`shown`: as the user named it); the
    line that says so. A symlink is written through, to the file it names; a target that is
    no regular file (a device, a folder, a pipe) is refused: `-` is standard output."""
    real = Path(os.path.realpath(target))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise AgentLoopError(f"cannot write {shown}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise AgentLoopError(f"cannot write {shown}: it is no regular file; name a file, or "
                             "`--report -` for standard output")
    page_html, holds = html(project)
    tmp = real.with_name(f".{real.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(page_html, encoding="utf-8")
        os.replace(tmp, real)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise AgentLoopError(f"cannot write {shown}: {exc.strerror or exc}") from None
    return f"wrote {shown}: {holds}"


def _events(path: Path) -> list[dict[str, Any]]:
    """Every run's events but the agents' moment-to-moment activity, the newest MAX_EVENTS."""
    kept: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
    try:
        with open(path, "rb") as log:
            for line in log:
                if b'"type":"AgentActivity"' not in line:
                    kept.extend(sources.events_in(line))
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise AgentLoopError(f"cannot read {path}: {exc.strerror}") from None
    return list(kept)
