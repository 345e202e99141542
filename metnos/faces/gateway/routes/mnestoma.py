"""The mnestoma for the owner (SPEC §7.1): `GET /api/mnestoma` (mnests, executors' use and
state, proto-mnests, traces), `GET /api/mnestoma.png` (its picture) and `GET /mnestoma`, the
"What I remember" page: what Metnos learned in plain words first (`metnos.faces.web.learned`), the
graph and its tables one click further, in the UI language, authenticated as the chat is."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse

from metnos.faces.gateway.deps import SESSION_COOKIE, LangDep, OwnerDep, ServiceDep, authenticate
from metnos.faces.gateway.routes.web import _render, page_locale
from metnos.faces.gateway.schemas import error_responses
from metnos.faces.web.learned import learned
from metnos.features.mnestoma import picture, views
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.i18n.tags import match_language
from metnos.turns.runtime import Runtime

router = APIRouter(tags=["mnestoma"])

PAGE_ROWS = 50  # mnests listed on the web page (the picture draws up to picture.MAX_EDGES)


@router.get("/api/mnestoma", responses=error_responses(401))
async def mnestoma(service: ServiceDep, owner: OwnerDep,
                   limit: int = Query(200, ge=1, le=views.MAX_MNESTS)) -> dict[str, Any]:
    """The mnestoma now: the heaviest `limit` mnests first."""
    return await asyncio.to_thread(in_session, service.engine, views.snapshot,
                                   service.registry, limit)


@router.get("/api/mnestoma.png", response_class=Response,
            responses={200: {"content": {"image/png": {}}}, **error_responses(401)})
async def mnestoma_png(service: ServiceDep, owner: OwnerDep, lang: LangDep,
                       locale: str | None = Query(None, alias="lang", max_length=35)
                       ) -> Response:
    """The picture of the mnestoma, its words in `lang` (else the request's language)."""
    chosen = match_language(locale, service.settings.active_languages) or lang
    body = await asyncio.to_thread(draw, service, chosen)
    return Response(body, media_type="image/png", headers={"Cache-Control": "no-store"})


@router.get("/mnestoma", response_class=HTMLResponse, include_in_schema=False)
async def mnestoma_page(request: Request, service: ServiceDep) -> HTMLResponse:
    locale = page_locale(request, service.settings)
    auth = await asyncio.to_thread(authenticate, request)
    if auth.owner is None:
        response = HTMLResponse(_render("login_needed.html.j2", locale), status_code=401)
        if request.cookies.get(SESSION_COOKIE) is not None:
            response.delete_cookie(SESSION_COOKIE, path="/")
        return response
    view = await asyncio.to_thread(in_session, service.engine, views.snapshot, service.registry,
                                   PAGE_ROWS)
    states = {state: i18n.get(f"WEB_MNESTOMA_STATE_{state.upper()}", locale)
              for state in ("active", "quarantined", "archived")}
    used = [e for e in view["executors"] if e["invocations"] > 0 or e["state"] != "active"]
    return HTMLResponse(_render(
        "mnestoma.html.j2", locale, view=view, states=states, used=used,
        learned=learned(view, locale),
        picture=f"/api/mnestoma.png?lang={locale}", width=picture.WIDTH_PX,
        height=picture.HEIGHT_PX))


def draw(service: Runtime, lang: str) -> bytes:
    """The PNG of the mnestoma now, in `lang` (blocking)."""
    view = in_session(service.engine, views.snapshot, service.registry, picture.MAX_EDGES)
    return picture.render(view, title=i18n.get("PIC_MNESTOMA_TITLE", lang, clock=view["clock"]),
                          empty=i18n.get("PIC_MNESTOMA_EMPTY", lang))
