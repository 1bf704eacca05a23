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
class _Reading:
    """Where the reader thread got to in one plan's files."""

    events_at: tuple[int, int] = (-1, 0)        # (inode, offset read up to)
    state_at: tuple[tuple[int, int, int], ...] = ()   # state.json and journal stamps
    view: str = ""


@dataclass
class _Story:
    """What a page that joins now is told of one plan (touched in the event loop only)."""

    view: str = ""
    history: list[str] = field(default_factory=list)
    activity: dict[str, str] = field(default_factory=dict)  # lane -> its newest activity


Change = tuple[str, str, Any]   # (plan, "view" | "reset" | "events", what)


class Hub:
    """Follows the plans of `root`; `subscribe` gives a page the story so far and its queue.
    The files are read in a worker thread; what they say is applied and handed out in the
    event loop, so a page never gets an event twice or misses one."""

    def __init__(self, root: Path, poll: float = 0.2) -> None:
        self.root = root
        self.poll = poll
        self.plans: dict[str, _Story] = {}
        self._reading: dict[str, _Reading] = {}
        self.clients: set[asyncio.Queue[Message | None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None   # the server's, once it runs

    async def follow(self) -> None:
        """Read the files every `poll` seconds, forever (cancelled when the server stops)."""
        while True:
            self.apply(await asyncio.to_thread(self.read))
            await asyncio.sleep(self.poll)

    def read(self) -> list[Change]:
        """What changed on disk since the last read (in a worker thread, one at a time)."""
        out: list[Change] = []
        for plan in sources.plans(self.root):
            reading = self._reading.setdefault(plan.key, _Reading())
            out += self._state(plan, reading)
            out += self._events(plan, reading)
        return out

    def _state(self, plan: sources.Plan, reading: _Reading) -> list[Change]:
        stamps = tuple(_stamp(p) for p in (plan.store.state_path, plan.store.journal.path))
        if stamps == reading.state_at:
            return []
        reading.state_at = stamps
        view = _json(sources.plan_view(plan))
        if view == reading.view:
            return []
        reading.view = view
        return [(plan.key, "view", view)]

    def _events(self, plan: sources.Plan, reading: _Reading) -> list[Change]:
        path = plan.store.events
        try:
            status = os.stat(path)
        except OSError:
            return []
        inode, offset = reading.events_at
        if status.st_ino != inode or status.st_size < offset:   # new, or replaced (--reset)
            events, end = sources.newest_run(path)
            reading.events_at = (status.st_ino, end)
            return [(plan.key, "reset", None), (plan.key, "events", events)]
        if status.st_size == offset:
            return []
        with open(path, "rb") as log:
            log.seek(offset)
            chunk = log.read(status.st_size - offset)
        whole = chunk[:chunk.rfind(b"\n") + 1]
        reading.events_at = (inode, offset + len(whole))
        return [(plan.key, "events", sources.events_in(whole))]

    def apply(self, changes: list[Change]) -> None:
        """Add `changes` to the story and hand them to every page (in the event loop)."""
        for key, kind, what in changes:
            story = self.plans.setdefault(key, _Story())
            if kind == "view":
                story.view = what
                self.broadcast(("plan", what))
            elif kind == "reset":
                self._started(key, story)
            else:
                for event in what:
                    self._add(key, story, event)

    def _started(self, key: str, story: _Story) -> None:
        story.history.clear()
        story.activity.clear()
        self.broadcast(("reset", _json({"plan": key})))

    def _add(self, key: str, story: _Story, event: dict[str, Any]) -> None:
        if event["type"] == "RunStarted" and story.history:
            self._started(key, story)
        data = _json({"plan": key, "event": event})
        lane = str(event.get("lane", ""))
        # A lane's activity is superseded by its next: a late page needs only the newest.
        if event["type"] == "AgentActivity":
            story.activity[lane] = data
        else:
            if event["type"] == "AgentStarted":   # a new agent: the last one's is old
                story.activity.pop(lane, None)
            story.history.append(data)
            del story.history[:-HISTORY]
        self.broadcast(("event", data))

    async def finish(self) -> None:
        """The last read (the run's closing events), then every page's stream ends."""
        self.apply(await asyncio.to_thread(self.read))
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
        for key, told in self.plans.items():
            story.append(("reset", _json({"plan": key})))
            if told.view:
                story.append(("plan", told.view))
            story += [("event", e) for e in told.history]
            story += [("event", e) for e in told.activity.values()]
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
