"""The `notify` setting: a short message to the user's services (apprise URLs: ntfy, Slack,
email, a JSON webhook, ...) when the run ends, a task fails, a conflict needs a person, a usage
limit means a long wait, or the budget stops the run.

It listens to the run's events and sends from a thread of its own, so a slow or unreachable
service never holds the run up; a failure to send is one warning, never a failed run."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, TypeVar

from agentloop.run.events import Emit, Event, LimitWait, RunFinished, TaskFinished, fan_out

LONG_WAIT = 15 * 60      # seconds: a usage-limit wait longer than this is worth a message
FLUSH_SECONDS = 20.0     # how long the end of the run waits for the last messages to go


T = TypeVar("T")


def notifying(urls: tuple[str, ...], plan: str, warn: Callable[[str], None], emit: Emit,
              run: Callable[[Emit], T]) -> T:
    """`run` with its events going to `emit` and to a Notifier of `urls`, whose last messages
    are sent (or given up) before this returns, however the run ends."""
    notifier = Notifier(urls, plan, warn)
    try:
        return run(fan_out(emit, notifier))
    finally:
        notifier.close()


class Notifier:
    """An event consumer that sends notices through apprise to `urls`."""

    def __init__(self, urls: tuple[str, ...], plan: str, warn: Callable[[str], None]) -> None:
        self.urls, self.plan, self.warn = urls, plan, warn
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._warned = False
        self._thread = threading.Thread(target=self._send_all, name="notify", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        """Note an event; one that matters becomes a message to send."""
        notice = worth_telling(event)
        if notice is not None:
            self._queue.put(notice)

    def close(self) -> None:
        """Send what is left (waiting FLUSH_SECONDS at most), then stop."""
        self._queue.put(None)
        self._thread.join(FLUSH_SECONDS)

    def _send_all(self) -> None:
        sender: Any = None
        while (notice := self._queue.get()) is not None:
            title, body = notice
            try:
                if sender is None:
                    sender = _apprise(self.urls)
                sent = sender.notify(title=f"agent-loop: {title}", body=f"{self.plan}: {body}")
                problem = None if sent else "no service accepted it"
            except Exception as exc:  # noqa: BLE001 - any failure of a notice is one warning
                problem = str(exc) or type(exc).__name__
            if problem and not self._warned:
                self._warned = True
                self.warn(f"warning: a notification could not be sent ({problem}); "
                          "the run goes on")


def _apprise(urls: tuple[str, ...]) -> Any:
    import logging

    import apprise

    logging.getLogger("apprise").setLevel(logging.CRITICAL)  # its failures: our one warning
    sender = apprise.Apprise()
    for url in urls:
        if not sender.add(url):
            raise ValueError(f"not a notification URL apprise knows: {url.split(':', 1)[0]}://…")
    return sender


def worth_telling(event: Event) -> tuple[str, str] | None:
    """(title, body) for an event a person wants to hear of, or None."""
    if isinstance(event, RunFinished):
        counts = ", ".join(f"{n} {s}" for s, n in event.counts if n)
        if event.stopped and "budget" in event.stopped:
            return "budget reached", f"the run stopped: {event.stopped} ({counts})"
        ended = f"stopped: {event.stopped}" if event.stopped else "finished"
        return f"run {'stopped' if event.stopped else 'finished'}", \
            f"the run {ended} ({counts or 'nothing to do'}; ${event.cost_usd:.2f}, " \
            f"{event.seconds / 60:.0f} min)"
    if isinstance(event, TaskFinished) and event.status == "failed":
        return "task failed", (f"task {event.number or event.index} failed: "
                               f"{event.error or 'no reason given'}")
    if isinstance(event, TaskFinished) and event.status == "conflicted":
        return "conflict needs a person", (f"task {event.number or event.index} "
                                           f"{event.error or 'conflicts'}")
    if isinstance(event, LimitWait) and event.seconds >= LONG_WAIT:
        return "usage limit", (f"waiting {event.seconds / 60:.0f} min for a usage limit "
                               f"({event.reason})")
    return None
