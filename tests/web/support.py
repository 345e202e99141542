"""Helpers of the web tests: the gateway with the web login mounted, reached as a browser."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
from asgi_lifespan import LifespanManager
from fastapi import FastAPI

from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.routes import login
from metnos.faces.web.link import create_login_link
from tests.support.home import GATEWAY_BASE, Home, served_app

ORIGIN = GATEWAY_BASE  # http://127.0.0.1:42618: the gateway's own origin in these tests


def web_app(home: Home) -> FastAPI:
    """`create_app` plus the web login (a no-op once create_app installs it itself)."""
    app = create_app(home.settings)
    login.install(app)
    return app


@asynccontextmanager
async def browser(home: Home, **client_kwargs: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway through httpx with NO credentials: a browser keeps its cookies."""
    app = web_app(home)
    async with LifespanManager(app, startup_timeout=60, shutdown_timeout=60) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url=GATEWAY_BASE, timeout=60,
                                     **client_kwargs) as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


def link_path(home: Home) -> str:
    """A fresh one-time link, made as `metnos login` makes it, as `/login?token=...`."""
    url = urlsplit(create_login_link(home.settings).url)
    return f"{url.path}?{url.query}"


async def log_in(client: httpx.AsyncClient, home: Home) -> str:
    """Follow a fresh link; the session cookie's value."""
    resp = await client.get(link_path(home))
    assert resp.status_code == 303, resp.text
    return str(client.cookies["metnos_session"])


def audit_lines(home: Home, action_prefix: str = "web.") -> list[dict[str, Any]]:
    path = home.workspace / ".audit" / "audit.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [x for x in lines if str(x["action"]).startswith(action_prefix)]


served = served_app  # `app` under uvicorn on 127.0.0.1:`port` (a thread); its base URL
