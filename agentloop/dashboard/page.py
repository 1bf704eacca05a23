"""The one page, for the live dashboard and the report alike: the HTML shell with our own small
script and style inline (no other file to fetch, no network for the report), and the policy
that lets that script run and nothing else: not a script an agent's text might smuggle in, not
a request to anywhere but the server itself."""

from __future__ import annotations

import base64
import hashlib
from html import escape
from importlib import resources

SHELL = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{policy}<title>{title}</title>
<style{nonce}>{style}</style></head>
<body><div id="app"></div>
{data}<script{nonce}>{script}</script></body></html>
"""


def _asset(name: str) -> str:
    return resources.files("agentloop.dashboard").joinpath("static", name).read_text("utf-8")


def live(nonce: str) -> str:
    """The served page; its scripts run under `nonce` (see `live_policy`)."""
    return SHELL.format(policy="", title="agent-loop", nonce=f' nonce="{nonce}"',
                        style=_asset("dashboard.css"), data="", script=_asset("dashboard.js"))


def live_policy(nonce: str) -> str:
    """The Content-Security-Policy of the served page: our own script and style, requests to
    this server only."""
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def report(title: str, data: bytes) -> str:
    """The standalone report: the page with the run's data inside it, allowed no request at all
    (its policy names the one script and the one style by their hashes)."""
    style, script = _asset("dashboard.css"), _asset("dashboard.js")
    # JSON inside <script>: a "</script>" in an agent's text must not close the element.
    body = data.replace(b"<", b"\\u003c").decode("utf-8")
    policy = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
              "img-src data:; base-uri 'none'; form-action 'none'")
    return SHELL.format(
        policy=f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n',
        title=escape(title), nonce="", style=style, script=script,
        data=f'<script type="application/json" id="report-data">{body}</script>\n')


def _hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return f"'sha256-{digest}'"
