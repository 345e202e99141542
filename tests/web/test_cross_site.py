"""Cross-site attacks on the gateway (SPEC §3; security notes F1–F4): DNS rebinding, CSRF,
cross-site WebSocket hijacking, unauthenticated routes, the owner token in a page."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import Route, WebSocketRoute
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from metnos.faces.gateway.security import HostGuard
from tests.support.home import MakeHome
from tests.support.pg import free_port
from tests.web.support import ORIGIN, audit_lines, browser, link_path, log_in, served, web_app

pytestmark = pytest.mark.attack

FOREIGN = [
    {"Origin": "http://evil.example"},
    {"Origin": "http://127.0.0.1:9999"},  # another local port: the same *site* for SameSite
    {"Origin": "https://127.0.0.1:42618"},
    {"Origin": "http://127.0.0.1.evil.example:42618"},
    {"Origin": "null"},  # a sandboxed frame, a file:// page
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
]


@pytest.mark.parametrize("headers", FOREIGN, ids=lambda h: "|".join(h.values()))
async def test_cookie_and_cross_origin_post_get_403(make_home: MakeHome,
                                                   headers: dict[str, str]) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        await log_in(client, home)
        resp = await client.post("/api/logout", headers=headers)
        assert resp.status_code == 403, resp.text
        assert set(resp.json()["error"]) == {"key", "message"}
        assert resp.json()["error"]["key"] == "ERR_ORIGIN_FORBIDDEN"
        patch = await client.patch("/api/sessions/x", json={"autonomy": "Full"}, headers=headers)
        assert patch.status_code == 403
        assert (await client.get("/api/audit")).status_code == 200  # still logged in
    assert [x["action"] for x in audit_lines(home)] == ["web.login"]  # no logout happened


async def test_cookie_and_same_origin_post_pass(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        await log_in(client, home)
        for origin in (ORIGIN, "http://localhost:42618", "http://[::1]:42618"):
            resp = await client.post("/api/pairing/revoke", headers={
                "Origin": origin, "Sec-Fetch-Site": "same-origin"},
                json={"channel": "telegram", "sender_id": "42"})
            assert resp.status_code == 404, resp.text  # through auth, into the handler
            assert resp.json()["error"]["key"] == "ERR_PAIRING_NOT_PAIRED"
        turn = await client.post("/api/turns", json={"text": "ciao", "lang": "it"},
                                 headers={"Origin": ORIGIN})
        assert turn.status_code == 200, turn.text


async def test_cookie_without_origin_cannot_change_anything(make_home: MakeHome) -> None:
    """Every browser sends Origin on a POST: a cookie-borne one without it is not a page's."""
    home = make_home(lang="en")
    async with browser(home) as client:
        await log_in(client, home)
        resp = await client.post("/api/logout")
        assert resp.status_code == 403 and resp.json()["error"]["key"] == "ERR_ORIGIN_FORBIDDEN"
        assert (await client.get("/api/audit")).status_code == 200  # GET needs no Origin


async def test_bearer_without_origin_passes_and_with_a_foreign_one_does_not(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home, headers=home.auth()) as client:
        ok = await client.post("/api/pairing/revoke", json={"channel": "telegram",
                                                            "sender_id": "42"})
        assert ok.status_code == 404 and ok.json()["error"]["key"] == "ERR_PAIRING_NOT_PAIRED"
        evil = await client.post("/api/pairing/revoke", headers={"Origin": "http://evil.example"},
                                 json={"channel": "telegram", "sender_id": "42"})
        assert evil.status_code == 403


@pytest.mark.parametrize("path", ["/", "/login?token=" + "A" * 43, "/healthz", "/api/audit"])
async def test_dns_rebinding_host_gets_403(make_home: MakeHome, path: str) -> None:
    home = make_home(lang="en")
    async with browser(home, headers=home.auth()) as client:
        resp = await client.get(path, headers={"Host": "evil.example"})
        assert resp.status_code == 403 and resp.json()["error"]["key"] == "ERR_HOST_FORBIDDEN"
    assert audit_lines(home) == []  # the login was not even tried


async def test_every_route_but_login_and_healthz_needs_credentials(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        app: FastAPI = client.app  # type: ignore[attr-defined]
        checked: list[str] = []
        for path, methods, websocket in _endpoints(app.routes):
            if websocket:
                assert not await _handshake_accepted(app, path), path
                checked.append(f"WS {path}")
                continue
            for method in sorted(methods - {"HEAD"}):
                resp = await client.request(method, _concrete(path), headers={"Origin": ORIGIN},
                                            json={} if method != "GET" else None)
                # /login without a token: the "link not valid" page, also a 401; the device
                # ceremony is the overlay's only (tests/devices): on loopback it is not found
                expected = 200 if path == "/healthz" else 404 if path.startswith(
                    "/device") else 401
                assert resp.status_code == expected, (method, path, resp.text)
                checked.append(f"{method} {path}")
        schema = (await client.get("/openapi.json", headers=home.auth())).json()
    documented = {f"{m.upper()} {p}" for p, ops in schema["paths"].items() for m in ops}
    assert documented <= set(checked), documented - set(checked)
    assert {"GET /", "GET /login", "POST /api/logout", "GET /openapi.json",
            "POST /api/turns", "GET /api/audit", "GET /healthz"} <= set(checked)


def _endpoints(routes: list[Any]) -> list[tuple[str, set[str], bool]]:
    """(path, methods, is a WebSocket) of every route, included routers flattened."""
    found: list[tuple[str, set[str], bool]] = []
    for route in routes:
        if hasattr(route, "effective_candidates"):  # FastAPI's lazily included router
            found += _endpoints(route.effective_candidates())
            continue
        original = getattr(route, "original_route", route)
        websocket = isinstance(original, APIWebSocketRoute | WebSocketRoute)
        assert websocket or isinstance(original, APIRoute | Route), route
        found.append((route.path, set(getattr(original, "methods", None) or ()), websocket))
    return found


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


async def _handshake_accepted(app: FastAPI, path: str) -> bool:
    """A handshake without credentials, from our own origin, straight into the ASGI app."""
    sent: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = [{"type": "websocket.connect"},
                                      {"type": "websocket.disconnect", "code": 1000}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "websocket.disconnect", "code": 1000}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "websocket", "path": _concrete(path), "raw_path": _concrete(path).encode(),
             "query_string": b"", "headers": [(b"host", b"127.0.0.1:42618"),
                                                (b"origin", ORIGIN.encode())],
             "scheme": "ws", "server": ("127.0.0.1", 42618), "client": ("127.0.0.1", 5),
             "subprotocols": [], "app": app, "asgi": {"version": "3.0"}}
    with contextlib.suppress(WebSocketDisconnect):  # an accepting route reads, finds us gone
        await app(scope, receive, send)
    return any(m["type"] == "websocket.accept" for m in sent)


def test_websocket_handshake_from_a_foreign_origin_gets_403(make_home: MakeHome) -> None:
    """Real HTTP and a real WebSocket client against uvicorn, with an echo route standing in
    for the web chat's socket: a foreign page's handshake is refused before any route runs."""
    home = make_home(lang="en")
    app = web_app(home)

    @app.websocket("/api/test-echo")
    async def echo(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(await ws.receive_text())
        await ws.close()

    # the route walk's probe sees this route accept a handshake without credentials
    assert asyncio.run(_handshake_accepted(app, "/api/test-echo"))
    port = free_port()
    with served(app, port) as base:
        ws_url = base.replace("http://", "ws://") + "/api/test-echo"
        for origin in (f"http://127.0.0.1:{port}", None):  # our page; the CLI (no Origin)
            with connect(ws_url, origin=origin, open_timeout=10) as ws:  # type: ignore[arg-type]
                ws.send("ping")
                assert ws.recv(timeout=10) == "ping"
        for origin in ("http://evil.example", "http://127.0.0.1:9999", "null"):
            with pytest.raises(InvalidStatus) as refused:
                connect(ws_url, origin=origin, open_timeout=10)  # type: ignore[arg-type]
            assert refused.value.response.status_code == 403
        handshake = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                     "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
        own = httpx.get(base + "/api/test-echo", headers=handshake)
        assert own.status_code == 101  # the same raw handshake, from no page: accepted
        for extra in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
            raw = httpx.get(base + "/api/test-echo", headers={**handshake, **extra})
            assert raw.status_code == 403, extra
        assert httpx.get(base + "/healthz").status_code == 200


async def test_security_headers_on_html(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        bad = await client.get("/login?token=" + "C" * 43)
        await log_in(client, home)
        page = await client.get("/")
    for resp in (bad, page):
        csp = resp.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert resp.headers["x-frame-options"] == "DENY"
        assert resp.headers["referrer-policy"] == "no-referrer"
        assert resp.headers["cache-control"] == "no-store"
        assert resp.headers["x-content-type-options"] == "nosniff"
        # no inline script (the CSP would block it): a script is a file of our own origin;
        # the page's strings travel in a JSON data block, which is never executed
        assert all("src=" in tag or 'type="application/json"' in tag
                   for tag in re.findall(r"<script[^>]*>", resp.text))
    assert "<script" not in bad.text and "style=" not in bad.text


async def test_a_foreign_page_cannot_spend_the_login_budget(make_home: MakeHome) -> None:
    """Links opened from another site (img tags, redirects, a form) are not tried: the browser
    gets a page whose button logs in from our own origin. The failure budget stays whole."""
    home = make_home(lang="en")
    good = link_path(home)
    async with browser(home) as client:
        for n in range(20):
            resp = await client.get(f"/login?token=guess-{n:02d}-" + "z" * 30,
                                    headers={"Sec-Fetch-Site": "cross-site"})
            assert resp.status_code == 200 and 'action="/login"' in resp.text
        confirm = await client.get(good, headers={"Sec-Fetch-Site": "cross-site"})
        assert confirm.status_code == 200 and "metnos_session" not in client.cookies
        assert good.split("token=")[1] in confirm.text  # carried by the form, not yet spent
        resp = await client.get(good, headers={"Sec-Fetch-Site": "same-origin"})
        assert resp.status_code == 303 and "metnos_session" in client.cookies
    assert [x["reason"] for x in audit_lines(home)] == ["ok"]


async def test_the_owner_token_is_never_in_a_page(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    bodies: list[httpx.Response] = []
    async with browser(home) as client:
        bodies.append(await client.get("/"))
        bodies.append(await client.get("/login"))
        bodies.append(await client.get("/login?token=" + "D" * 43))
        bodies.append(await client.get(link_path(home), headers={"Sec-Fetch-Site": "cross-site"}))
        await log_in(client, home)
        bodies.append(await client.get("/"))
        bodies.append(await client.post("/api/logout", headers={"Origin": ORIGIN,
                                                                "Accept": "text/html"}))
    for resp in bodies:
        assert resp.headers["content-type"].startswith("text/html"), resp.url
        assert home.token not in resp.text
        assert home.token not in str(resp.headers)


@pytest.mark.parametrize(("host", "origin", "site", "allowed"), [
    ("127.0.0.1:42618", "http://127.0.0.1:42618", None, True),
    ("127.0.0.1:42618", "http://localhost:42618", None, True),
    ("127.0.0.1:42618", "http://[::1]:42618", None, True),
    ("127.0.0.1:42618", "HTTP://127.0.0.1:42618", None, True),
    ("127.0.0.1", "http://127.0.0.1", None, True),
    ("127.0.0.1:80", "http://127.0.0.1", None, True),
    ("127.0.0.1:42618", None, None, True),  # no browser: the CLI
    ("127.0.0.1:42618", None, "same-origin", True),
    ("127.0.0.1:42618", None, "none", True),
    ("127.0.0.1:42618", "http://127.0.0.1:42619", None, False),
    ("127.0.0.1:42618", "http://127.0.0.1", None, False),
    ("127.0.0.1:42618", "http://127.0.0.1:42618/", None, False),
    ("127.0.0.1:42618", "http://127.0.0.1:42618.evil.example", None, False),
    ("127.0.0.1:42618", "http://::1:42618", None, False),
    ("127.0.0.1:42618", "null", None, False),
    ("127.0.0.1:42618", "", "cross-site", False),
    ("127.0.0.1:42618", None, "same-site", False),
    ("127.0.0.1:42618", "http://evil.example", "same-origin", False),  # Origin decides
])
@pytest.mark.parametrize("kind", ["POST", "DELETE", "websocket"])
async def test_origin_guard(host: str, origin: str | None, site: str | None, allowed: bool,
                           kind: str) -> None:
    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "websocket":
            await send({"type": "websocket.accept"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"in"})

    guard = HostGuard(app, ["127.0.0.1", "localhost", "[::1]", "::1"], max_body_bytes=1024)
    headers = [(b"host", host.encode()), (b"content-length", b"0")]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if site is not None:
        headers.append((b"sec-fetch-site", site.encode()))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"} if kind == "websocket" else {
            "type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = ({"type": "websocket", "path": "/ws", "headers": headers, "extensions": {}}
             if kind == "websocket" else
             {"type": "http", "method": kind, "path": "/api/x", "headers": headers})
    await guard(scope, receive, send)
    if kind == "websocket":
        assert (sent[0]["type"] == "websocket.accept") is allowed, sent
        if not allowed:
            assert sent[0] == {"type": "websocket.close", "code": 1008}
    else:
        assert (sent[0]["status"] == 200) is allowed, sent
