"""What both fake model APIs share: a threaded HTTP server on 127.0.0.1, a queue of scripted
replies by model, the record of every request, the replies that are not the API's own (a hang,
a directed answer), and the request handler's plumbing."""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, TypeVar

# A hung request gives up after this long even if nobody stops the server, so no thread lives on.
HANG_LIMIT_SECONDS = 600.0


@dataclass(frozen=True)
class Hang:
    """Accept the request and answer nothing until the server stops."""


@dataclass(frozen=True)
class Directed:
    """Answer this request from the directives in the task text, as if nothing were scripted."""


def sse(events: list[dict[str, Any]]) -> bytes:
    """Server-sent events, each named by its `type`."""
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


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


R = TypeVar("R", bound=Request)


class RecordingHandler(BaseHTTPRequestHandler):
    """A fake's request handler: HTTP/1.1 with a Content-Length on every answer (so the CLI may
    keep connections alive), no log lines (the record is the log), each request recorded."""

    protocol_version = "HTTP/1.1"
    request_id_header = "request-id"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the recording is the log; stderr noise would only clutter pytest output

    def _send(self, status: int, content_type: str, body: bytes,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.send_header(self.request_id_header, f"req_fake_{uuid.uuid4().hex[:20]}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _received(self, server: LoopbackServer, kind: type[R]) -> R:
        """The request, read (its body as JSON when it is JSON) and recorded."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        request = kind(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                       body)
        server._record(request)
        return request

    def _hang(self, server: LoopbackServer) -> None:
        """Answer nothing until the server stops (or HANG_LIMIT_SECONDS pass)."""
        server._stopping.wait(HANG_LIMIT_SECONDS)
        self.close_connection = True
