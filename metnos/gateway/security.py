"""Gateway guards: the Host header (DNS rebinding) and the owner's bearer token."""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from metnos import i18n

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_HOST_RE = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:]+)(?::[0-9]{1,5})?\Z")


class HostGuard:
    """Refuse (403) any HTTP or WebSocket request whose Host is not a loopback name.

    A page on evil.example that rebinds its DNS name to 127.0.0.1 still sends
    `Host: evil.example`; checking it closes that door even though we bind to loopback.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if host_name(host) in self.allowed:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": {"key": "ERR_HOST_FORBIDDEN", "message": i18n.get(
            "ERR_HOST_FORBIDDEN", host=host[:100])}}).encode()
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def host_name(host: str) -> str:
    """`127.0.0.1:42618` → `127.0.0.1`; `[::1]:80` → `[::1]`. Anything that is not
    `name[:digits]` or `[v6][:digits]` (e.g. `[::1]evil.example`) comes back whole, so it
    matches no allowed name."""
    host = host.strip().lower()
    match = _HOST_RE.match(host)
    return match.group(1) if match else host


def token_matches(presented: str | None, expected: str) -> bool:
    if not presented or not expected:
        return False
    return hmac.compare_digest(presented.encode(), expected.encode())


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""
