"""One reader of `.agent-loop/` for every browser: it follows each plan's state and events.jsonl
and hands each message to every open page through a bounded queue of its own. A page that
cannot keep up (a slow or vanished browser) is dropped, never waited for: the run writes its
files whatever happens here, and the hub only reads them."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloop.dashboard import sources
from agentloop.files import jsonbytes

QUEUE = 2000           # messages a page may fall behind before it is dropped
HISTORY = 50_000       # events of one run kept for a page that joins late
Message = tuple[str, str]   # (SSE event name, JSON data)


@dataclass
class _Followed:
    """What the hub knows of one plan: where it read its files up to, and the run's events."""

    events_at: tuple[int, int] = (-1, 0)        # (inode, offset read up to)
    state_at: tuple[tuple[int, int, int], ...] = ()            # state.json and journal stamps
    view: str = ""
    history: list[str] = field(default_factory=list)
    activity: dict[str, str] = field(default_factory=dict)  # lane -> its newest activity


class Hub:
    """Follows the plans of `root`; `subscribe` gives a page the story so far and its queue."""

    def __init__(self, root: Path, poll: float = 0.2) -> None:
        self.root = root
        self.poll = poll
        self.plans: dict[str, _Followed] = {}
        self.clients: set[asyncio.Queue[Message | None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None   # the server's, once it runs

    async def follow(self) -> None:
        """Read the files every `poll` seconds, forever (cancelled when the server stops)."""
        while True:
            for message in await asyncio.to_thread(self.read):
                self.broadcast(message)
            await asyncio.sleep(self.poll)

    def read(self) -> list[Message]:
        """What changed on disk since the last read, as messages (in a worker thread)."""
        out: list[Message] = []
        for plan in sources.plans(self.root):
            followed = self.plans.setdefault(plan.key, _Followed())
            out += self._state(plan, followed)
            out += self._events(plan, followed)
        return out

    def _state(self, plan: sources.Plan, followed: _Followed) -> list[Message]:
        stamps = tuple(_stamp(p) for p in (plan.store.state_path, plan.store.journal.path))
        if stamps == followed.state_at:
            return []
        followed.state_at = stamps
        view = _json(sources.plan_view(plan))
        if view == followed.view:
            return []
        followed.view = view
        return [("plan", view)]

    def _events(self, plan: sources.Plan, followed: _Followed) -> list[Message]:
        path = plan.store.events
        try:
            status = os.stat(path)
        except OSError:
            return []
        inode, offset = followed.events_at
        if status.st_ino != inode or status.st_size < offset:   # new, or replaced (--reset)
            events, end = sources.newest_run(path)
            followed.events_at = (status.st_ino, end)
            return self._started(plan.key, followed) + self._add(plan.key, followed, events)
        if status.st_size == offset:
            return []
        with open(path, "rb") as log:
            log.seek(offset)
            chunk = log.read(status.st_size - offset)
        whole = chunk[:chunk.rfind(b"\n") + 1]
        followed.events_at = (inode, offset + len(whole))
        return self._add(plan.key, followed, sources.events_in(whole))

    def _started(self, key: str, followed: _Followed) -> list[Message]:
        followed.history.clear()
        followed.activity.clear()
        return [("reset", _json({"plan": key}))]

    def _add(self, key: str, followed: _Followed, events: list[dict[str, Any]]) -> list[Message]:
        out: list[Message] = []
        for event in events:
            if event["type"] == "RunStarted" and followed.history:
                out += self._started(key, followed)
            data = _json({"plan": key, "event": event})
            lane = str(event.get("lane", ""))
            # A lane's activity is superseded by its next: a late page needs only the newest.
            if event["type"] == "AgentActivity":
                followed.activity[lane] = data
            else:
                if event["type"] == "AgentStarted":   # a new agent: the last one's is old
                    followed.activity.pop(lane, None)
                followed.history.append(data)
                del followed.history[:-HISTORY]
            out.append(("event", data))
        return out

    async def finish(self) -> None:
        """The last read (the run's closing events), then every page's stream ends."""
        for message in await asyncio.to_thread(self.read):
            self.broadcast(message)
        for queue in list(self.clients):
            self.clients.discard(queue)
            try:
                queue.put_nowait(None)
            except asyncio.QueueFull:
                pass  # a page this far behind is dropped at the server's stop anyway

    def subscribe(self) -> tuple[list[Message], asyncio.Queue[Message | None]]:
        """The story so far (every plan's view and its run's events), and a queue of what comes
        next; call from the event loop, so no message falls between the two."""
        story: list[Message] = []
        for key, followed in self.plans.items():
            story.append(("reset", _json({"plan": key})))
            if followed.view:
                story.append(("plan", followed.view))
            story += [("event", e) for e in followed.history]
            story += [("event", e) for e in followed.activity.values()]
        story.append(("ready", "{}"))
        queue: asyncio.Queue[Message | None] = asyncio.Queue(QUEUE)
        self.clients.add(queue)
        return story, queue

    def leave(self, queue: asyncio.Queue[Message | None]) -> None:
        """A page went away."""
        self.clients.discard(queue)

    def broadcast(self, message: Message) -> None:
        """Hand `message` to every page; one whose queue is full is dropped (its stream ends,
        and the browser's reconnect gets the whole story again)."""
        for queue in list(self.clients):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:
                self.clients.discard(queue)
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(None)


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        status = os.stat(path)
    except OSError:
        return (-1, -1, -1)
    return (status.st_mtime_ns, status.st_size, status.st_ino)


def _json(data: Any) -> str:
    return jsonbytes.dumps(data).decode("utf-8")
