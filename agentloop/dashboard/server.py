"""The dashboard's HTTP side (starlette): the page, its event stream, a task's log and diff,
and the stop buttons. Every request shows the token, its Host header names this server, and a
control comes as a POST from this server's own page (its Origin); anything else is a 403."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
from pathlib import Path
from typing import Any, AsyncIterator

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentloop.dashboard import controls, diffs, logs, page, sources
from agentloop.dashboard.hub import Hub
from agentloop.errors import AgentLoopError

SEND_TIMEOUT = 10.0   # seconds a page may take to accept one message before it is dropped
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}


class Guard:
    """The checks every request passes before a route sees it (ASGI middleware)."""

    def __init__(self, app: ASGIApp, token: str, hosts: frozenset[str] | None) -> None:
        self.app, self.token, self.hosts = app, token, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self.problem(Request(scope))
            if problem:
                await PlainTextResponse(f"forbidden: {problem}\n", 403, HEADERS)(
                    scope, receive, send)
                return
        await self.app(scope, receive, send)

    def problem(self, request: Request) -> str | None:
        """Why `request` is refused, or None."""
        host = request.headers.get("host", "")
        if self.hosts is not None and host not in self.hosts:
            return "unexpected Host header"
        given = request.query_params.get("token") or request.headers.get("x-token", "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return "no or wrong token"
        if request.method not in ("GET", "HEAD"):
            if request.headers.get("origin") != f"{request.url.scheme}://{host}":
                return "the request does not come from the dashboard's page"
        return None


def build(root: Path, token: str, hosts: frozenset[str] | None, hub: Hub) -> Guard:
    """The dashboard of the plans under `root`."""
    views = _Views(root, hub)
    routes = [Route("/", _index), Route("/events", views.stream),
              Route("/api/log", views.log_page), Route("/api/diff", views.diff),
              Route("/api/stop", views.stop, methods=["POST"])]
    return Guard(Starlette(routes=routes, lifespan=views.lifespan), token, hosts)


async def _index(request: Request) -> Response:
    """The page, with a fresh nonce for its script."""
    nonce = secrets.token_urlsafe(16)
    return HTMLResponse(page.live(nonce), headers={
        **HEADERS, "Content-Security-Policy": page.live_policy(nonce)})


class _Views:
    """What the page asks of the plans under `root`: their events (through the hub), a task's
    log and diff, and a stop."""

    def __init__(self, root: Path, hub: Hub) -> None:
        self.root, self.hub = root, hub

    async def stream(self, request: Request) -> Response:
        """The story so far, then every event as it comes (server-sent events)."""
        story, queue = self.hub.subscribe()

        async def messages() -> AsyncIterator[dict[str, str]]:
            try:
                for event, data in story:
                    yield {"event": event, "data": data}
                while (message := await queue.get()) is not None:
                    yield {"event": message[0], "data": message[1]}
            finally:
                self.hub.leave(queue)

        return EventSourceResponse(messages(), headers=HEADERS, ping=15,
                                   send_timeout=SEND_TIMEOUT)

    def log_page(self, request: Request) -> Response:
        """A page of a task's log, or the lines that match a search (`q`)."""
        path, problem = _log(self.root, request)
        if path is None:
            return _refused(problem)
        query = request.query_params.get("q")
        try:
            if query is not None:
                return JSONResponse(logs.search(path, query[:200]), headers=HEADERS)
            return JSONResponse(logs.page(path, _int(request, "offset", -1)), headers=HEADERS)
        except OSError as exc:
            return _refused(f"cannot read the log: {exc.strerror}")

    def diff(self, request: Request) -> Response:
        """A landed task's change as a patch."""
        task, problem = _task(self.root, request)
        if task is None:
            return _refused(problem)
        state, record = task
        text = diffs.patch(self.root, state.vcs or "", record.change_id, record.commit_id)
        return PlainTextResponse(text, headers=HEADERS)

    async def stop(self, request: Request) -> Response:
        """One of the two stops, asked of a plan's run (agentloop.dashboard.controls)."""
        body = await request.json()
        plan = sources.plan_at(self.root, str(body.get("plan", "")))
        if plan is None:
            return _refused("no such plan")
        try:
            said = await asyncio.to_thread(controls.stop, plan, bool(body.get("now")))
        except AgentLoopError as exc:
            return JSONResponse({"ok": False, "message": str(exc)}, 409, headers=HEADERS)
        return JSONResponse({"ok": True, "message": said}, headers=HEADERS)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """While the server runs, the hub follows the plans' events on its loop."""
        self.hub.loop = asyncio.get_running_loop()
        follower = asyncio.create_task(self.hub.follow())
        try:
            yield
        finally:
            follower.cancel()


def _task(root: Path, request: Request) -> tuple[Any, str]:
    plan = sources.plan_at(root, request.query_params.get("plan", ""))
    if plan is None:
        return None, "no such plan"
    try:
        state = plan.store.load()
    except AgentLoopError as exc:
        return None, str(exc)
    number = _int(request, "task", 0)
    if state is None or not 1 <= number <= len(state.tasks):
        return None, "no such task"
    return (state, state.tasks[number - 1]), ""


def _log(root: Path, request: Request) -> tuple[Path | None, str]:
    task, problem = _task(root, request)
    if task is None:
        return None, problem
    logs_of = [a.log for a in task[1].history if a.log]
    which = _int(request, "n", len(logs_of) - 1)
    if not 0 <= which < len(logs_of):
        return None, "this task has no log yet"
    path = sources.inside(root / sources.DIRNAME, logs_of[which])
    if path is None:
        return None, "the log is outside .agent-loop/"
    return path, ""


def _int(request: Request, name: str, default: int) -> int:
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


def _refused(problem: str) -> Response:
    return JSONResponse({"error": problem}, 404, headers=HEADERS)
