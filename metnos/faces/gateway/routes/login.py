"""The web login (SPEC §3): `GET /login?token=...`, `POST /api/logout`, and `GET /` until the
web chat takes that address.

`/login` trades the one-time token of `metnos login` for a web session and sets its cookie
(`metnos_session`: HttpOnly, SameSite=Strict, Path=/, not Secure: see below), then sends the
browser to `/` (303). A wrong, used or expired token gets one 401 page that does not say which;
failures are rate-limited per client address (429 with Retry-After), but a live link always
works, so a local process failing on purpose cannot lock the owner out. A link followed from
a page of another site (`Sec-Fetch-Site: cross-site`/`same-site`) is not tried at all: the
browser gets a page with a "log in" button on our own origin, so no site can spend the owner's
failure budget or log a browser in behind its user's back (the page cannot be framed, CSP
frame-ancestors).

The cookie is not `Secure`: the gateway speaks plain HTTP on loopback, where a Secure cookie is
not reliably stored or sent (browsers differ on 127.0.0.1), and loopback traffic never leaves
the machine, which is what Secure protects against.

`install(app)` mounts all of this (`/` only while nothing else serves it) and puts the OpenAPI
schema behind the owner's credentials (every route but `/login` and `/healthz` answers 401
without them).
"""

from __future__ import annotations

import asyncio
import math
import weakref

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from metnos.faces.gateway.deps import (
    CLEAR_COOKIE,
    SESSION_COOKIE,
    LangDep,
    OwnerDep,
    ServiceDep,
    gateway_state,
)
from metnos.faces.gateway.schemas import error_responses
from metnos.faces.web import pages
from metnos.faces.web import service as web
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.turns.runtime import Runtime

router = APIRouter(tags=["web"])
_NO_STORE = {"Cache-Control": "no-store"}
_FOREIGN_SITES = ("cross-site", "same-site")
_INSTALLED: weakref.WeakSet[FastAPI] = weakref.WeakSet()  # the apps `install` mounted it on


@router.get("/login", include_in_schema=False)
async def login(request: Request, service: ServiceDep, lang: LangDep,
                token: str | None = None) -> Response:
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    if not web.well_formed(token):  # nothing was guessed: not counted, not audited
        return _html(pages.login_invalid(lang), 401)
    if site in _FOREIGN_SITES:
        return _html(pages.login_confirm(lang, token), 200)
    client = request.client.host if request.client else "unknown"
    old = request.cookies.get(SESSION_COOKIE)
    result = await asyncio.to_thread(_redeem, service, token, client, old)
    if result.status == "locked":
        minutes = max(1, math.ceil(result.retry_after_s / 60))
        return _html(pages.login_locked(lang, minutes), 429,
                     {"Retry-After": str(result.retry_after_s)})
    if result.status != "ok" or result.session_secret is None:
        return _html(pages.login_invalid(lang), 401)
    response = RedirectResponse("/", status_code=303, headers=_NO_STORE)
    response.set_cookie(SESSION_COOKIE, result.session_secret,
                        max_age=service.settings.web.session_ttl_s, path="/",
                        httponly=True, samesite="strict", secure=False)
    return response


def _redeem(service: Runtime, token: str, client: str,
            old: str | None) -> web.LoginResult:
    with db_session(service.engine) as db:
        result = web.redeem(db, token, client=client, settings=service.settings.web,
                            audit=service.audit)
        if result.status == "ok" and old:  # the browser's previous session ends with it
            web.end_session(db, old, audit=service.audit)
    return result


@router.post("/api/logout", responses=error_responses(401))
def logout(request: Request, service: ServiceDep, owner: OwnerDep, lang: LangDep) -> Response:
    """End this browser's web session: the row is revoked, the cookie cleared, and the
    session's open WebSockets and event streams are closed."""
    cookie = request.cookies.get(SESSION_COOKIE)
    with db_session(service.engine) as db:
        live = web.session_owner(db, cookie)
        ended = web.end_session(db, cookie, audit=service.audit)
    if live is not None:
        gateway_state(request).connections.end(live.id)
    response: Response
    if "text/html" in request.headers.get("accept", ""):  # the logout button's form
        response = _html(pages.logged_out(lang), 200)
    else:
        response = JSONResponse({"logged_out": ended,
                                 "message": i18n.get("MSG_WEB_LOGGED_OUT", lang)})
    response.headers.append("Set-Cookie", CLEAR_COOKIE)
    return response


def install(app: FastAPI) -> None:
    """Mount the web login on `app` (idempotent), and put the OpenAPI schema behind the
    owner's credentials. The page at `/` is the web chat's (routes/web.py)."""
    if app in _INSTALLED:
        return
    _INSTALLED.add(app)
    app.include_router(router)
    _protect_openapi(app)


def _protect_openapi(app: FastAPI) -> None:
    """The schema lists every route and parameter: the owner's to read, not any caller's."""
    url = app.openapi_url
    if not url:
        return
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != url]

    async def openapi(owner: OwnerDep) -> JSONResponse:
        return JSONResponse(app.openapi())

    app.add_api_route(url, openapi, methods=["GET"], include_in_schema=False)


def _html(body: str, status: int, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers={**_NO_STORE, **(headers or {})})
