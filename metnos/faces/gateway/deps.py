"""Dependencies of the gateway's routes, as `Annotated` aliases.

Who is calling (`authenticate`): on loopback, the owner, by EITHER the owner token as
`Authorization: Bearer <token>` (the CLI, scripts) OR the `metnos_session` cookie of a web
session (the browser, after `metnos login`); over the overlay, the person an approved device
belongs to (the owner or a family member), and nothing else. Explicit credentials that fail
are refused, never replaced by the other kind. `PersonDep` admits anyone of the household,
`OwnerDep` the owner only. A browser's (cookie or device) request that changes something must also
carry our own `Origin` (the gateway's HostGuard already refused a foreign one): SameSite=Strict
treats another port of 127.0.0.1 as the same site, the Origin check does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request
from starlette.requests import HTTPConnection

from metnos.faces.gateway.exposed import device_of, on_overlay
from metnos.faces.gateway.security import (
    UNSAFE_METHODS,
    hosts_of,
    own_origins,
    token_matches,
    web_scheme,
)
from metnos.faces.gateway.state import GatewayState, state_of
from metnos.faces.web import service as web
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.turns import language
from metnos.turns.handle import TurnHandle
from metnos.turns.runtime import Runtime

SESSION_COOKIE = "metnos_session"
CLEAR_COOKIE = f"{SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"


@dataclass(frozen=True)
class Auth:
    """The outcome of `authenticate`: `user` and `role` set, or `error` (an i18n key) saying
    why not. `connection` keys the live connections a logout or a revocation ends."""

    user: str | None
    via: Literal["bearer", "cookie", "device", "device_token"] | None = None
    error: str | None = None
    connection: str | None = None
    role: str = "owner"

    @property
    def owner(self) -> str | None:
        """The caller's user id when the caller is the owner."""
        return self.user if self.role == "owner" else None


def gateway_state(conn: HTTPConnection) -> GatewayState:
    return state_of(conn.app)


def get_service(conn: HTTPConnection) -> Runtime:
    return state_of(conn.app).ready()


def get_turns(conn: HTTPConnection) -> TurnHandle:
    """The gateway's turn handle (start, follow, reply, decide, undo), set at start-up."""
    return state_of(conn.app).handle()


def request_lang(request: HTTPConnection) -> str:
    """The request's UI locale, for errors and chrome: the best Accept-Language tag among the
    active languages (q-values honoured), else METNOS_LANG."""
    header = request.headers.get("accept-language")
    service = state_of(request.app).service
    if service is None:  # before start-up finished: the first tag is enough
        first = (header or "").split(",")[0].split(";")[0].strip()
        return i18n.normalise_lang(first or None)
    return language.ui_locale(None, header, service.settings)


def authenticate(conn: HTTPConnection) -> Auth:
    """Who `conn` (an HTTP request or a WebSocket handshake) is; reads the database for a
    cookie. Blocking: call it from a thread (FastAPI does, for a sync dependency).

    Over the overlay only a device counts (`metnos.faces.gateway.exposed`); on loopback, the
    owner's bearer token or a web session."""
    device = device_of(conn)
    if device is not None:
        return Auth(device.user_id, via="device_token" if device.app else "device",
                    connection=f"device:{device.device_id}", role=device.role)
    if on_overlay(conn):
        return Auth(None, error="ERR_DEVICE_NOT_ADMITTED")
    scheme, _, token = conn.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        if token_matches(token.strip(), state_of(conn.app).owner_token):
            return Auth("owner", via="bearer")
        return Auth(None, error="ERR_AUTH_INVALID")
    cookie = conn.cookies.get(SESSION_COOKIE)
    if cookie is None:
        return Auth(None, error="ERR_AUTH_MISSING")
    with db_session(get_service(conn).engine) as db:
        session = web.session_owner(db, cookie)
    if session is None:
        return Auth(None, error="ERR_AUTH_SESSION_INVALID")
    return Auth(session.user_id, via="cookie", connection=session.id)


def require_person(request: Request) -> str:
    """The caller is someone of the household (the owner, or a member on their device): their
    user id. A browser's change must come from our own origin (see the module)."""
    auth = authenticate(request)
    lang = request_lang(request)
    if auth.user is None:
        key = auth.error or "ERR_AUTH_MISSING"
        headers = {"WWW-Authenticate": "Bearer"}
        if key == "ERR_AUTH_SESSION_INVALID":
            headers["Set-Cookie"] = CLEAR_COOKIE
        raise HTTPException(401, detail={"key": key, "message": i18n.get(key, lang)},
                            headers=headers)
    if auth.via in ("cookie", "device") and request.method in UNSAFE_METHODS:
        origin = request.headers.get("origin", "").strip().lower()
        allowed = own_origins(request.headers.get("host", ""), hosts_of(
            request.scope, get_service(request).settings.gateway.allowed_hosts),
            web_scheme(request.scope))
        if origin not in allowed:  # a browser always sends it here: its absence is suspect
            raise HTTPException(403, detail={"key": "ERR_ORIGIN_FORBIDDEN", "message": i18n.get(
                "ERR_ORIGIN_FORBIDDEN", lang, origin=origin[:100] or "-")})
    request.state.auth = auth
    return auth.user


def require_owner(request: Request) -> str:
    """The caller must be the owner: bearer token, web session cookie, or the owner's own
    device. A member gets 403, and the attempt leaves an audit line."""
    user = require_person(request)
    auth: Auth = request.state.auth
    if auth.owner is None:
        get_service(request).audit.append(
            sender=user, channel="web", action="gateway.owner_only", decision="deny",
            reason="ERR_AUTH_OWNER_ONLY",
            outcome=f"{request.method} {request.url.path[:120]}")
        key = "ERR_AUTH_OWNER_ONLY"
        raise HTTPException(403, detail={"key": key, "message": i18n.get(
            key, request_lang(request))})
    return user


def same_origin_browser(request: Request) -> bool:
    """False when a browser says the request comes from a page of another origin (its
    `Origin`, or `Sec-Fetch-Site` when it sends no Origin, as on a GET): what the WebSocket
    handshake and every POST already refuse, for a GET that must not answer such a page."""
    origin = request.headers.get("origin", "").strip().lower()
    if origin:
        return origin in own_origins(request.headers.get("host", ""), hosts_of(
            request.scope, get_service(request).settings.gateway.allowed_hosts),
            web_scheme(request.scope))
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    return site in ("", "same-origin", "none")


ServiceDep = Annotated[Runtime, Depends(get_service)]
TurnsDep = Annotated[TurnHandle, Depends(get_turns)]
StateDep = Annotated[GatewayState, Depends(gateway_state)]
OwnerDep = Annotated[str, Depends(require_owner)]
PersonDep = Annotated[str, Depends(require_person)]
LangDep = Annotated[str, Depends(request_lang)]
