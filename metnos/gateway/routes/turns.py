"""`/api/turns`: send a message, read a turn."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from metnos import approvals, i18n
from metnos.db import models
from metnos.db.engine import session as db_session
from metnos.errors import MetnosError
from metnos.gateway.deps import LangDep, OwnerDep, ServiceDep
from metnos.gateway.schemas import ErrorPublic, TurnCreate, TurnPublic

router = APIRouter(prefix="/api/turns", tags=["turns"])

REPLY_WAIT_S = 120.0
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 413, 422)}


@router.post("", response_model=TurnPublic, responses=_ERRORS)
async def create_turn(body: TurnCreate, request: Request, service: ServiceDep,
                      owner: OwnerDep, lang: LangDep) -> TurnPublic:
    """Start a turn and answer with its reply as soon as it is composed."""
    try:
        ctx = await service.open_turn(body.text, session_id=body.session_id, lang=body.lang,
                                      channel="api", sender=owner,
                                      untrusted=[("forwarded", t) for t in body.forwarded])
    except MetnosError as exc:
        code = 413 if exc.key == "ERR_MESSAGE_TOO_LONG" else 400
        raise HTTPException(code, detail={"key": exc.key, "message": exc.message(
            body.lang or lang)}) from exc
    request.app.state.launch(request.app.state.runner(service, ctx))
    answered = await service.wait_reply(ctx.turn_id, REPLY_WAIT_S)
    if answered is None:
        return TurnPublic(turn_id=ctx.turn_id, session_id=ctx.session_id, status="running",
                          reply=None, flow_run_id=ctx.flow_run_id, timings_ms=dict(ctx.timings))
    return TurnPublic(turn_id=ctx.turn_id, session_id=ctx.session_id, status=answered.status,
                      reply=answered.reply, approvals=answered.approvals,
                      flow_run_id=ctx.flow_run_id, timings_ms=dict(ctx.timings))


@router.get("/{turn_id}", response_model=TurnPublic, responses=_ERRORS)
async def read_turn(turn_id: str, service: ServiceDep, owner: OwnerDep,
                    lang: LangDep) -> TurnPublic:
    with db_session(service.engine) as db:
        turn = models.get_turn(db, turn_id)
        if turn is None:
            raise HTTPException(404, detail={"key": "ERR_TURN_NOT_FOUND", "message": i18n.get(
                "ERR_TURN_NOT_FOUND", lang, turn_id=turn_id[:64])})
        waiting = [approvals.public(a) for a in approvals.approvals_of_turn(db, turn.id)]
        return TurnPublic(turn_id=turn.id, session_id=turn.session_id, status=turn.status,
                          reply=turn.reply, approvals=waiting, created_at=turn.created_at,
                          finished_at=turn.finished_at, flow_run_id=turn.flow_run_id,
                          timings_ms=turn.timings or {})
