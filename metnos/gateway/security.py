"""Gateway guards: the Host header (DNS rebinding), the size of a request body, and the
owner's bearer token."""

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

    def __init__(self, app: ASGIApp, allowed_hosts: list[str], max_body_bytes: int) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed_hosts}
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if host_name(host) not in self.allowed:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await _refuse(send, 403, "ERR_HOST_FORBIDDEN", host=host[:100])
            return
        if scope["type"] == "http" and scope.get("method") in ("POST", "PUT", "PATCH"):
            length = _header(scope, b"content-length")
            if not length.isdigit():  # chunked or missing: the size must be known up front
                await _refuse(send, 411, "ERR_REQUEST_LENGTH_REQUIRED")
                return
            if int(length) > self.max_body_bytes:
                await _refuse(send, 413, "ERR_REQUEST_TOO_LARGE", limit=self.max_body_bytes)
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, key: str, **vars: Any) -> None:
    body = json.dumps({"error": {"key": key, "message": i18n.get(key, None, **vars)}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
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
