"""The synt's candidates, for the owner only (SPEC §7.3): list, review, sign, reject.

`GET /api/synt/candidates`, `GET /api/synt/candidates/{name}`,
`POST /api/synt/candidates/{name}/sign` (the gateway holds the signing key; the registry is
reloaded so the next turn can call it), `POST /api/synt/candidates/{name}/reject`. The page
`GET /synt` shows the same in the UI language, with sign/reject as plain HTML forms (no
script: the page's CSP forbids inline code), which post to `/synt/{name}/{decision}`.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import jinja2
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep
from metnos.faces.gateway.routes.web import page_locale
from metnos.faces.gateway.schemas import error_responses
from metnos.features.synt import candidates, cascade
from metnos.features.synt.candidates import CandidateError
from metnos.ground import i18n
from metnos.ground.errors import ManifestError, SignatureError
from metnos.ground.i18n.formatting import text_direction
from metnos.turns.runtime import Runtime

router = APIRouter(tags=["synt"])
# the synt's accept handlers (compose, generate, promote, the introvert steps, candidate) are
# registered when its modules are imported: the gateway, which decides proposals, imports them
HANDLERS = cascade.__name__
_TEMPLATES = Path(__file__).resolve().parents[3] / "features" / "synt" / "templates"
_PAGE_KEYS = ("SYNT_PAGE_TITLE", "SYNT_PAGE_EMPTY", "SYNT_BUTTON_SIGN", "SYNT_BUTTON_REJECT",
              "SYNT_LABEL_MANIFEST", "SYNT_LABEL_CODE", "SYNT_LABEL_TESTS", "SYNT_LABEL_PROFILE",
              "SYNT_COL_NAME", "SYNT_COL_CAPABILITY", "SYNT_COL_TESTS", "SYNT_COL_COST")


@router.get("/api/synt/candidates", responses=error_responses(401))
async def list_candidates(service: ServiceDep, owner: OwnerDep) -> dict[str, Any]:
    rows = await asyncio.to_thread(candidates.list_candidates, service.settings)
    return {"candidates": rows}


@router.get("/api/synt/candidates/{name}", responses=error_responses(401, 404))
async def show_candidate(name: str, service: ServiceDep, owner: OwnerDep,
                         lang: LangDep) -> dict[str, Any]:
    try:
        return await asyncio.to_thread(candidates.show, service.settings, name)
    except CandidateError as exc:
        raise _http(exc, lang) from exc


@router.post("/api/synt/candidates/{name}/{decision}", responses=error_responses(401, 404, 422))
async def decide_candidate(name: str, decision: Literal["sign", "reject"],
                           service: ServiceDep, owner: OwnerDep,
                           lang: LangDep) -> dict[str, Any]:
    """`sign`: admitted from the next turn; `reject`: moved to METNOS_HOME/synt/rejected/."""
    try:
        return await asyncio.to_thread(decide, service, name, decision)
    except (CandidateError, ManifestError, SignatureError) as exc:
        raise _http(exc, lang) from exc


def decide(service: Runtime, name: str, decision: str) -> dict[str, Any]:
    """Sign or reject `name`, then reload the registry (blocking)."""
    if decision == "sign":
        facts = candidates.sign(service.settings, service.engine, name)
        service.reload_registry()
        return {"name": name, "status": "signed", "code_sha256": facts.code_sha256,
                "admitted": name in service.registry}
    path = candidates.reject(service.settings, service.engine, name)
    service.reload_registry()
    return {"name": name, "status": "rejected", "path": str(path)}


@router.get("/synt", response_class=HTMLResponse, include_in_schema=False)
async def synt_page(request: Request, service: ServiceDep, owner: OwnerDep) -> HTMLResponse:
    locale = page_locale(request, service.settings)
    settings = service.settings
    rows = await asyncio.to_thread(candidates.list_candidates, settings)
    shown = [await asyncio.to_thread(candidates.show, settings, row["name"]) for row in rows]
    text = {key: i18n.get(key, locale) for key in _PAGE_KEYS}
    html = _template().render(locale=locale, text=text, rows=rows, shown=shown,
                              direction=text_direction(locale))
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})


@router.post("/synt/{name}/{decision}", include_in_schema=False)
async def synt_page_decide(name: str, decision: Literal["sign", "reject"],
                           service: ServiceDep, owner: OwnerDep,
                           lang: LangDep) -> RedirectResponse:
    try:
        await asyncio.to_thread(decide, service, name, decision)
    except (CandidateError, ManifestError, SignatureError) as exc:
        raise _http(exc, lang) from exc
    return RedirectResponse("/synt", status_code=303)


def _http(exc: CandidateError | ManifestError | SignatureError, lang: str) -> HTTPException:
    status = 404 if isinstance(exc, CandidateError) else 422
    return HTTPException(status, detail={"key": exc.key,
                                         "message": i18n.get(exc.key, lang, **exc.vars)})


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("synt.html.j2")
