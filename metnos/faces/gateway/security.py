"""Gateway guards: the Host header (DNS rebinding), the Origin of requests that change
something and of WebSocket handshakes (CSRF, cross-site WebSocket hijacking), the size of a
request body, the security headers of every answer, and the owner's bearer token."""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from metnos.ground import i18n

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_HOST_RE = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:]+)(?::([0-9]{1,5}))?\Z")
HOSTS_STATE = "metnos.hosts"  # the names accepted where a request arrived, in its state
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FETCH_SITE_OK = frozenset({"same-origin", "none"})  # `none`: typed or opened by the user
_HEADERS = ((b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"no-referrer"))
_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self' {ws}://{host}; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'")


class HostGuard:
    """Refuse (403) any HTTP or WebSocket request whose Host is not a loopback name, and any
    POST/PUT/PATCH/DELETE or WebSocket handshake that a page of another origin sent.

    A page on evil.example that rebinds its DNS name to 127.0.0.1 still sends
    `Host: evil.example`; checking it closes that door even though we bind to loopback. A page
    of another origin (another site, or another port of 127.0.0.1, which counts as the same
    *site* for SameSite cookies) announces itself with `Origin` (or `Sec-Fetch-Site`); a
    request with neither comes from no browser (the CLI with its bearer token) and passes.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: list[str], max_body_bytes: int,
                 path_limits: Mapping[str, int] | None = None,
                 exposed: tuple[str, frozenset[str]] | None = None) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed_hosts}
        # (address, its names): a request that arrived at the overlay address is judged by
        # the names devices use there, and by them only
        self.exposed = exposed
        self.max_body_bytes = max_body_bytes
        # paths that take a larger body (a photo sent to /api/attachments)
        self.path_limits = dict(path_limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})[HOSTS_STATE] = self.allowed_for(scope)
        refusal = self._refusal(scope)
        if refusal is not None:
            status, key, vars = refusal
            if scope["type"] == "websocket":
                await refuse_websocket(receive, send)
                return
            lang = i18n.normalise_lang(first_tag(_header(scope, b"accept-language")))
            await refuse(send, status, key, lang, **vars)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _with_security_headers(send, _header(scope, b"host"),
                                                              secure=web_scheme(scope) == "https"))

    def allowed_for(self, scope: Scope) -> set[str]:
        """The Host names accepted at the address this request arrived at."""
        server = scope.get("server")
        if self.exposed is not None and server and str(server[0]) == self.exposed[0]:
            return set(self.exposed[1])
        return self.allowed

    def _refusal(self, scope: Scope) -> tuple[int, str, dict[str, Any]] | None:
        host = _header(scope, b"host")
        if host_name(host) not in self.allowed_for(scope):
            return 403, "ERR_HOST_FORBIDDEN", {"host": host[:100]}
        method = scope.get("method", "")
        if scope["type"] == "websocket" or method in UNSAFE_METHODS:
            origin = _header(scope, b"origin")
            if not self.same_origin(scope, host):
                return 403, "ERR_ORIGIN_FORBIDDEN", {"origin": origin[:100] or "-"}
        if scope["type"] == "http" and method in ("POST", "PUT", "PATCH"):
            length = _header(scope, b"content-length")
            if not length.isdigit():  # chunked or missing: the size must be known up front
                return 411, "ERR_REQUEST_LENGTH_REQUIRED", {}
            limit = self.path_limits.get(scope.get("path", ""), self.max_body_bytes)
            if int(length) > limit:
                return 413, "ERR_REQUEST_TOO_LARGE", {"limit": limit}
        return None

    def same_origin(self, scope: Scope, host: str) -> bool:
        """True unless the request carries a browser's sign of coming from another origin."""
        origin = _header(scope, b"origin")
        if origin:
            return origin.strip().lower() in own_origins(host, self.allowed_for(scope),
                                                         web_scheme(scope))
        site = _header(scope, b"sec-fetch-site").strip().lower()
        return not site or site in _FETCH_SITE_OK


def hosts_of(scope: Scope, fallback: Iterable[str]) -> set[str]:
    """The Host names HostGuard accepted for this request's listener (else `fallback`)."""
    found = scope.get("state", {}).get(HOSTS_STATE)
    return set(found) if found is not None else set(fallback)


def web_scheme(scope: Scope) -> str:
    """`https` for a request that came over TLS (the overlay's, with a certificate), else
    `http` (a WebSocket's `wss`/`ws` likewise)."""
    return "https" if scope.get("scheme") in ("https", "wss") else "http"


def own_origins(host: str, allowed_hosts: Iterable[str], scheme: str = "http") -> set[str]:
    """The origins of our own pages as reached through `host`: every allowed name on the port
    the request came to (`http://127.0.0.1:42618`, `http://[::1]:42618`; `https://…` over
    TLS)."""
    match = _HOST_RE.match(host.strip().lower())
    port = match.group(2) if match else None
    default = "443" if scheme == "https" else "80"
    suffix = f":{port}" if port and port != default else ""
    return {f"{scheme}://{name.lower()}{suffix}" for name in allowed_hosts
            if name.startswith("[") or ":" not in name}  # `::1` unbracketed: no origin


def _with_security_headers(send: Send, host: str, secure: bool = False) -> Send:
    """`send` adding the security headers to the answer (HTML also gets its CSP and no-store)."""
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            present = {bytes(name).lower() for name, _ in headers}
            extra = list(_HEADERS)
            ctype = next((bytes(v) for n, v in headers if bytes(n).lower() == b"content-type"),
                         b"")
            if ctype.startswith(b"text/html"):
                csp = _CSP.format(host=host, ws="wss" if secure else "ws")
                extra += [(b"content-security-policy", csp.encode("latin-1")),
                          (b"cache-control", b"no-store")]
            headers += [(n, v) for n, v in extra if n not in present]
            message = {**message, "headers": headers}
        await send(message)
    return wrapped


async def refuse(send: Send, status: int, key: str, lang: str | None = None,
                  **vars: Any) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": _error_headers(body := _error_body(key, lang, **vars))})
    await send({"type": "http.response.body", "body": body})


async def refuse_websocket(receive: Receive, send: Send) -> None:
    """Refuse a handshake by closing before accepting: the server answers it with a 403.
    (Browsers show a handshake's body to no script, so a JSON body would tell nobody.)"""
    message = await receive()
    if message.get("type") == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})


def _error_body(key: str, lang: str | None, **vars: Any) -> bytes:
    return json.dumps({"error": {"key": key, "message": i18n.get(key, lang, **vars)}}).encode()


def _error_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            *_HEADERS]


def first_tag(accept_language: str) -> str | None:
    return accept_language.split(",")[0].split(";")[0].strip()[:35] or None


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
