"""`/api/sessions/{id}`: read a conversation, set its autonomy level (SPEC §4).

Autonomy is per session: `ReadOnly`, `Supervised` (the default of new sessions, from
`policy.autonomy`) or `Full`. Only the owner token changes it, and each change is audited.
Forbidden paths, the Laws and the sandbox apply at every level.

`interaction_language` is the session's persisted language (SPEC §9.6): read-only here, set
when the session was created and never rewritten; null only on a legacy session no turn has
resumed yet (the first one pins the workspace language). `ui_locale` is this request's
locale (Accept-Language, else METNOS_LANG), in which its error messages are written.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, ConfigDict

from metnos import i18n
from metnos.db.engine import session as db_session
from metnos.db.models import ChatSession, utcnow
from metnos.gateway.deps import OwnerDep, ServiceDep
from metnos.gateway.schemas import ErrorPublic
from metnos.settings import Autonomy
from metnos.turns.language import ui_locale
from metnos.turns.service import TurnService

router = APIRouter(prefix="/api/sessions", tags=["sessions"])


def request_locale(request: Request) -> str:
    service: TurnService = request.app.state.service
    return ui_locale(None, request.headers.get("accept-language"), service.settings)


LocaleDep = Annotated[str, Depends(request_locale)]
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 422)}


class SessionPublic(BaseModel):
    session_id: str
    channel: str
    interaction_language: str | None
    autonomy: str
    ui_locale: str | None = None


class SessionUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    autonomy: Autonomy


@router.get("/{session_id}", response_model=SessionPublic, responses=_ERRORS)
async def read_session(session_id: str, service: ServiceDep, owner: OwnerDep,
                       lang: LocaleDep) -> SessionPublic:
    return await asyncio.to_thread(_read, service, session_id, owner, lang)


@router.patch("/{session_id}", response_model=SessionPublic, responses=_ERRORS)
async def update_session(session_id: str, body: SessionUpdate, service: ServiceDep,
                         owner: OwnerDep, lang: LocaleDep) -> SessionPublic:
    def change() -> SessionPublic:
        with db_session(service.engine) as db:
            chat = _own(db.get(ChatSession, session_id[:64]), owner, session_id, lang)
            before = chat.autonomy
            chat.autonomy, chat.updated_at = body.autonomy, utcnow()
            db.add(chat)
            db.commit()
        service.audit.append(sender=owner, channel="api", session_id=chat.id,
                             action="session.autonomy", decision="info",
                             reason=f"{before}->{body.autonomy}", outcome="done")
        return _public(chat, lang)
    return await asyncio.to_thread(change)


def _read(service: TurnService, session_id: str, owner: str, lang: str) -> SessionPublic:
    with db_session(service.engine) as db:
        return _public(_own(db.get(ChatSession, session_id[:64]), owner, session_id, lang), lang)


def _own(chat: ChatSession | None, owner: str, session_id: str, lang: str) -> ChatSession:
    if chat is None or chat.user_id != owner:
        raise HTTPException(404, detail={"key": "ERR_SESSION_NOT_FOUND", "message": i18n.get(
            "ERR_SESSION_NOT_FOUND", lang, session_id=session_id[:64])})
    return chat


def _public(chat: ChatSession, locale: str) -> SessionPublic:
    return SessionPublic(session_id=chat.id, channel=chat.channel,
                         interaction_language=chat.interaction_language, autonomy=chat.autonomy,
                         ui_locale=locale)
