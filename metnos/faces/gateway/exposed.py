"""The gateway on the overlay (issue 30): the one address it also listens on for the
family's devices (`[gateway] expose`), and the gate every request reaching it goes through.

`metnos.faces.web.overlay.exposed(settings)` resolves the setting (an address, or an
interface's address) into an `Exposed`: where to listen, and the host names a device may use
there (`expose_name` and the address itself); `listening_sockets` binds them. The loopback
listener keeps its loopback names; a request is judged by the address it arrived at
(`scope["server"]`), so `Host: 127.0.0.1` on the overlay, or the overlay's name on loopback,
is refused like any foreign name.

`DeviceGate` admits a request on the exposed address only with an approved device's
credential (`metnos.features.pairing.devices`), checked against the database on every
request: it then carries that person (`device_of(conn)`). Without one, only the ceremony
answers (`/device`, its script and its two calls); a page is sent there, anything else gets
401. The owner's bearer token and `metnos login` sessions count on loopback only.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.requests import HTTPConnection

from metnos.faces.gateway.process import Listener
from metnos.faces.gateway.security import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    first_tag,
    refuse,
    refuse_websocket,
)
from metnos.faces.gateway.state import state_of
from metnos.faces.web.overlay import Exposed
from metnos.features.pairing import devices
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

DEVICE_COOKIE = "metnos_device"
CLEAR_DEVICE_COOKIE = f"{DEVICE_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict".encode()
CEREMONY = frozenset({"/device", "/device/device.js", "/device/ask", "/device/state",
                      "/static/chat.css", "/static/favicon.svg"})
_STATE = "metnos.device"  # the admitted device, in the scope's state
_OVERLAY = "metnos.overlay"  # what its credential was worth (every request on the overlay)


@dataclass(frozen=True)
class DeviceAuth:
    device_id: str
    user_id: str
    role: str
    app: bool = False  # presented as a bearer token (an app, not a browser: no Origin)


def listening_sockets(settings: Settings, found: Exposed | None) -> list[socket.socket]:
    """The bound sockets to serve: loopback, and the exposed address when there is one."""
    port = settings.gateway.port
    made = [_bound(settings.gateway.host, port)]
    if found is None:
        return made
    try:
        made.append(_bound(found.address, port))
    except OSError as exc:  # not this machine's address (the overlay is down): loopback only
        log.error("gateway.expose_unavailable %s", i18n.get(
            "ERR_GATEWAY_EXPOSE_UNAVAILABLE", settings.lang, value=found.address,
            reason=exc.strerror or str(exc)))
        return made
    if not found.overlay:
        log.warning("gateway.exposed_outside_overlay %s", i18n.get(
            "MSG_GATEWAY_EXPOSED_OUTSIDE_OVERLAY", settings.lang, address=found.address))
    return made


def listeners(built: Any, settings: Settings, **config: Any) -> list[Listener]:
    """The servers to run, each with its sockets: the gateway's own (its lifespan) on
    loopback, and on the overlay address while that speaks plain HTTP; with a certificate
    (`expose_tls_cert`), a TLS server of the same app for the overlay address. A certificate
    that cannot be loaded is said in the log, and the overlay address is not served."""
    sockets = listening_sockets(settings, state_of(built).exposed)
    own = uvicorn.Server(uvicorn.Config(built, **config))
    cert, key = settings.gateway.expose_tls_cert, settings.gateway.expose_tls_key
    if len(sockets) == 1 or not cert:
        return [(own, sockets)]
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        log.error("gateway.expose_unavailable %s", i18n.get(
            "ERR_GATEWAY_EXPOSE_UNAVAILABLE", settings.lang, value=cert, reason=str(exc)))
        for sock in sockets[1:]:
            sock.close()
        return [(own, sockets[:1])]
    tls = uvicorn.Config(built, **{**config, "lifespan": "off"}, ssl_certfile=cert,
                         ssl_keyfile=key)
    return [(own, sockets[:1]), (uvicorn.Server(tls), sockets[1:])]


def device_of(conn: HTTPConnection) -> DeviceAuth | None:
    """The device the gate admitted for this request, if it came over the overlay."""
    found = conn.scope.get("state", {}).get(_STATE)
    return found if isinstance(found, DeviceAuth) else None


class DeviceGate:
    """Only approved devices past the ceremony on the exposed address (see the module)."""

    def __init__(self, app: ASGIApp, found: Exposed | None) -> None:
        self.app, self.found = app, found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.found is None \
                or not self.found.serves(scope):
            await self.app(scope, receive, send)
            return
        presented = await asyncio.to_thread(self._check, scope)
        scope.setdefault("state", {})[_OVERLAY] = presented
        if presented.status == "admitted" and presented.user_id and presented.role:
            scope.setdefault("state", {})[_STATE] = DeviceAuth(
                presented.device_id or "", presented.user_id, presented.role,
                app=_bearer(scope) is not None)
            await self.app(scope, receive, send)
            return
        if presented.status == "refused" and presented.reason != "ERR_DEVICE_NOT_ADMITTED":
            # a credential refused (revoked, another device's, forged) is dropped from the
            # browser: refused once, audited once, not at every retry of an open page
            send = _forgetting_the_credential(send)
        if scope.get("path", "") in CEREMONY:
            await self.app(scope, receive, send)
        else:
            await _not_admitted(scope, receive, send)

    def _check(self, scope: Scope) -> devices.Presented:
        conn = HTTPConnection(scope)
        cookie = conn.cookies.get(DEVICE_COOKIE) or _bearer(scope)
        if cookie is None:
            return devices.Presented("refused", reason="ERR_DEVICE_NOT_ADMITTED")
        service = state_of(scope["app"]).ready()
        client = scope.get("client") or ("", 0)
        with db_session(service.engine) as db:
            return devices.check(db, cookie, str(client[0]), keys_dir=service.settings.keys_dir,
                                 audit=service.audit)


def _bearer(scope: Scope) -> str | None:
    """The device token an app sends as `Authorization: Bearer` (`metnos devices token`)."""
    scheme, _, token = HTTPConnection(scope).headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def on_overlay(conn: HTTPConnection) -> bool:
    """True for a request that arrived at the exposed address (admitted or not)."""
    return presented_of(conn) is not None


def presented_of(conn: HTTPConnection) -> devices.Presented | None:
    """What the device credential of a request at the exposed address was worth (None:
    the request came over loopback)."""
    found = conn.scope.get("state", {}).get(_OVERLAY)
    return found if isinstance(found, devices.Presented) else None


def client_address(conn: HTTPConnection) -> str:
    return conn.client.host if conn.client else ""


def _forgetting_the_credential(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []),
                                              (b"set-cookie", CLEAR_DEVICE_COOKIE)]}
        await send(message)
    return wrapped


async def _not_admitted(scope: Scope, receive: Receive, send: Send) -> None:
    """A page goes to the ceremony; a WebSocket is closed; an API call gets 401."""
    if scope["type"] == "websocket":
        await refuse_websocket(receive, send)
        return
    conn = HTTPConnection(scope)
    if scope.get("method") == "GET" and "text/html" in conn.headers.get("accept", ""):
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", b"/device"), (b"cache-control", b"no-store"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    lang = i18n.normalise_lang(first_tag(conn.headers.get("accept-language", "")))
    await refuse(send, 401, "ERR_DEVICE_NOT_ADMITTED", lang)


def _bound(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock
