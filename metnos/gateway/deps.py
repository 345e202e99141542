"""Dependencies of the gateway's routes, as `Annotated` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from metnos import i18n
from metnos.gateway.security import token_matches
from metnos.turns import language
from metnos.turns.service import TurnService


def get_service(request: Request) -> TurnService:
    service: TurnService = request.app.state.service
    return service


def request_lang(request: Request) -> str:
    """The request's UI locale, for errors and chrome: the best Accept-Language tag among the
    active languages (q-values honoured), else METNOS_LANG."""
    header = request.headers.get("accept-language")
    service: TurnService | None = getattr(request.app.state, "service", None)
    if service is None:  # before start-up finished: the first tag is enough
        first = (header or "").split(",")[0].split(";")[0].strip()
        return i18n.normalise_lang(first or None)
    return language.ui_locale(None, header, service.settings)


def require_owner(request: Request) -> str:
    """The caller must present the owner token as `Authorization: Bearer <token>`."""
    lang = request_lang(request)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, detail={"key": "ERR_AUTH_MISSING",
                                         "message": i18n.get("ERR_AUTH_MISSING", lang)},
                            headers={"WWW-Authenticate": "Bearer"})
    if not token_matches(token.strip(), request.app.state.owner_token):
        raise HTTPException(401, detail={"key": "ERR_AUTH_INVALID",
                                         "message": i18n.get("ERR_AUTH_INVALID", lang)},
                            headers={"WWW-Authenticate": "Bearer"})
    return "owner"


ServiceDep = Annotated[TurnService, Depends(get_service)]
OwnerDep = Annotated[str, Depends(require_owner)]
LangDep = Annotated[str, Depends(request_lang)]
