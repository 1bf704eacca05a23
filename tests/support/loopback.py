"""What both fake model APIs share: a threaded HTTP server on 127.0.0.1, a queue of scripted
replies by model, and the record of every request."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass(frozen=True)
class Request:
    """One request as a fake received it. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def posted_to(self, endpoint: str) -> bool:
        """Whether this is a POST to `endpoint`, whatever query the client added."""
        return self.method == "POST" and self.path.split("?")[0] == endpoint

    @property
    def model(self) -> str | None:
        """The model id the client asked for."""
        return self.body.get("model") if isinstance(self.body, dict) else None


class LoopbackServer:
    """Serves on a free port of 127.0.0.1; a context manager, or `start()` and `stop()`."""

    def __init__(self, handler: Callable[[Any], type[BaseHTTPRequestHandler]]) -> None:
        self._lock = threading.Lock()
        # (model substring or None for any model, reply), in the order they were scripted
        self._queue: list[tuple[str | None, Any]] = []
        self._requests: list[Any] = []
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler(self))
        self._server.daemon_threads = True
        # A short poll interval makes stop() quick; the default 0.5 s adds up over many tests.
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> Any:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hung requests and close the socket."""
        self._stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *replies: Any, model: str | None = None) -> None:
        """Queue replies, answered in order by requests for a model whose id contains `model`
        (any model when None)."""
        with self._lock:
            self._queue.extend((model, r) for r in replies)

    @property
    def pending(self) -> list[Any]:
        """Scripted replies not used yet."""
        with self._lock:
            return [reply for _, reply in self._queue]

    @property
    def requests(self) -> list[Any]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def _record(self, request: Any) -> None:
        with self._lock:
            self._requests.append(request)

    def _scripted(self, model: str | None) -> Any:
        """The first queued reply for `model`, taken off the queue; None when there is none."""
        with self._lock:
            for i, (wanted, _) in enumerate(self._queue):
                if wanted is None or wanted in (model or ""):
                    return self._queue.pop(i)[1]
        return None
