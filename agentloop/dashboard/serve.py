"""--serve: the dashboard's server in a thread beside the run (uvicorn), its address with a
fresh token printed once and written nowhere, and how long it stays after the run."""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import uvicorn

from agentloop.dashboard.hub import Hub
from agentloop.dashboard.server import build
from agentloop.errors import AgentLoopError

LOOPBACK = "127.0.0.1"
START_SECONDS = 10.0


@dataclass(frozen=True)
class Served:
    """A running dashboard: the address to open (token included) and how to stop it."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread
    hub: Hub

    def stop(self) -> None:
        """Stop serving, once open pages have the run's last events; their streams end."""
        if self.hub.loop is not None and self.thread.is_alive():
            done = asyncio.run_coroutine_threadsafe(self.hub.finish(), self.hub.loop)
            try:
                done.result(timeout=5)
            except Exception:  # noqa: BLE001 - a server that cannot say goodbye still stops
                pass
        self.server.should_exit = True
        self.thread.join(timeout=5)


def start(root: Path, host: str | None, port: int | None, warn: Callable[[str], None]) -> Served:
    """Serve the plans under `root` on `host` (default 127.0.0.1) and `port` (default: a free
    one) from a daemon thread, once it listens."""
    host = host or LOOPBACK
    if not _loopback(host):
        warn(f"warning: the dashboard listens on {host}, not only on this machine: anyone who "
             "can reach it and has its link can read the logs and stop the run")
    token = secrets.token_urlsafe(24)
    hub = Hub(root)
    # Any Host until the port is known: nobody has the token before the line is printed.
    guard = build(root, token, None, hub)
    config = uvicorn.Config(guard, host=host, port=port or 0,
                            log_level="critical", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="dashboard", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise AgentLoopError(f"the dashboard could not listen on {host}:{port or 'a free port'}"
                                 " (is the port taken?)")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    guard.hosts = _hosts(host, bound)
    shown = f"[{host}]" if ":" in host else host
    return Served(f"http://{shown}:{bound}/?token={token}", server, thread, hub)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host headers a browser sends to this server; None (any) when it listens on every
    address, where the names it is reached by are not known (the token still guards it)."""
    if host in ("0.0.0.0", "::"):
        return None
    names = {host, f"[{host}]"} | ({"127.0.0.1", "localhost", "[::1]"} if _loopback(host)
                                  else set())
    return frozenset(f"{n}:{port}" for n in names)


def wait_for_ctrl_c() -> None:
    """Keep the dashboard served until Ctrl+C (or SIGTERM, which the CLI turns into one)."""
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
