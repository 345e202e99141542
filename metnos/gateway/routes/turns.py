"""`/api/turns`: send a message, read a turn.

Two languages travel with a turn and are never mixed (SPEC §9.6): `interaction_language`,
the session's persisted language that the reply is written in (a new session takes it from
the client's UI locale; a resumed one keeps it whatever the request says), and `ui_locale`,
the locale of this request (`lang`, else Accept-Language, else METNOS_LANG), used for the
request's own chrome such as error messages.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from metnos import approvals, i18n
from metnos.db import models
from metnos.db.engine import session as db_session
from metnos.errors import MetnosError
from metnos.gateway.deps import OwnerDep, ServiceDep
from metnos.gateway.schemas import ErrorPublic, TurnCreate, TurnPublic
from metnos.turns.language import ui_locale

router = APIRouter(prefix="/api/turns", tags=["turns"])

REPLY_WAIT_S = 120.0
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 413, 422)}


class TurnLanguages(TurnPublic):
    interaction_language: str | None = None  # the session's: the reply's language
    ui_locale: str | None = None  # this request's: its error messages and chrome


@router.post("", response_model=TurnLanguages, responses=_ERRORS)
async def create_turn(body: TurnCreate, request: Request, service: ServiceDep,
                      owner: OwnerDep) -> TurnLanguages:
    """Start a turn and answer with its reply as soon as it is composed."""
    accept = request.headers.get("accept-language")
    locale = ui_locale(body.lang, accept, service.settings)
    try:
        ctx = await service.open_turn(body.text, session_id=body.session_id, lang=body.lang,
                                      channel="api", sender=owner, accept_language=accept,
                                      untrusted=[("forwarded", t) for t in body.forwarded])
    except MetnosError as exc:
        code = 413 if exc.key == "ERR_MESSAGE_TOO_LONG" else 400
        raise HTTPException(code, detail={"key": exc.key, "message": exc.message(
            locale)}) from exc
    request.app.state.launch(request.app.state.runner(service, ctx))
    answered = await service.wait_reply(ctx.turn_id, REPLY_WAIT_S)
    langs = {"interaction_language": ctx.lang, "ui_locale": ctx.ui_locale}
    if answered is None:
        return TurnLanguages(turn_id=ctx.turn_id, session_id=ctx.session_id, status="running",
                             reply=None, flow_run_id=ctx.flow_run_id,
                             timings_ms=dict(ctx.timings), **langs)
    return TurnLanguages(turn_id=ctx.turn_id, session_id=ctx.session_id,
                         status=answered.status, reply=answered.reply,
                         approvals=answered.approvals, flow_run_id=ctx.flow_run_id,
                         timings_ms=dict(ctx.timings), **langs)


@router.get("/{turn_id}", response_model=TurnLanguages, responses=_ERRORS)
async def read_turn(turn_id: str, request: Request, service: ServiceDep,
                    owner: OwnerDep) -> TurnLanguages:
    locale = ui_locale(None, request.headers.get("accept-language"), service.settings)
    with db_session(service.engine) as db:
        turn = models.get_turn(db, turn_id)
        if turn is None:
            raise HTTPException(404, detail={"key": "ERR_TURN_NOT_FOUND", "message": i18n.get(
                "ERR_TURN_NOT_FOUND", locale, turn_id=turn_id[:64])})
        waiting = [approvals.public(a) for a in approvals.approvals_of_turn(db, turn.id)]
        return TurnLanguages(turn_id=turn.id, session_id=turn.session_id, status=turn.status,
                             reply=turn.reply, approvals=waiting, created_at=turn.created_at,
                             finished_at=turn.finished_at, flow_run_id=turn.flow_run_id,
                             timings_ms=turn.timings or {}, interaction_language=turn.lang,
                             ui_locale=locale)
