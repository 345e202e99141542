"""`/api/evolution`: the history of evolutionary moves, taking one back, and the owner's own
moves on an executor's lifecycle (SPEC §7.5–7.6).

- `GET /api/evolution/moves`: the latest moves, newest first (when, kind, target, motivation,
  whether and by what it was taken back).
- `POST /api/evolution/moves/{id}/undo`: take a move back (the undo is a move of its own).
- `POST /api/evolution/executors/{name}/{move}` with `{"why": ...}`: quarantine, release,
  archive or restore an executor, with the owner's motivation.
Every move and every refusal leaves one audit line (`evolution.<kind>`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, Field

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep
from metnos.faces.gateway.schemas import error_responses
from metnos.features.mnestoma import ager as _ager  # noqa: F401 - registers what accepting archiving does
from metnos.features.mnestoma import moves
from metnos.features.mnestoma.lifecycle import STATE_MOVES, move_executor
from metnos.features.mnestoma.models import EvolutionMove
from metnos.features.mnestoma.moves import Actor, EvolutionError
from metnos.ground import i18n
from metnos.turns.runtime import Runtime

router = APIRouter(prefix="/api/evolution", tags=["evolution"])
_STATUS = {"ERR_EVOLUTION_MOVE_NOT_FOUND": 404, "ERR_EVOLUTION_EXECUTOR_UNKNOWN": 404,
           "ERR_EVOLUTION_MOVE_UNKNOWN": 404, "ERR_EVOLUTION_WHY_MISSING": 422}
# the others (its state, a later move, already undone): 409


class EvolutionMovePublic(BaseModel):
    id: str
    kind: str
    kind_text: str
    target: str
    motivation: str
    clock: int
    created_at: datetime
    audit_seq: int | None
    undoes: str | None
    undone_by: str | None


class EvolutionMovesPublic(BaseModel):
    moves: list[EvolutionMovePublic]


class EvolutionMoveResult(BaseModel):
    move: EvolutionMovePublic
    message: str


class OwnerMoveCreate(BaseModel):
    why: str = Field(min_length=1, max_length=500)


def public(row: EvolutionMove, lang: str) -> EvolutionMovePublic:
    return EvolutionMovePublic(
        id=row.id, kind=row.kind, kind_text=i18n.get(f"MSG_EVOLUTION_KIND_{row.kind.upper()}",
                                                    lang),
        target=row.target, motivation=row.motivation, clock=row.clock,
        created_at=row.created_at, audit_seq=row.audit_seq, undoes=row.undoes,
        undone_by=row.undone_by)


@router.get("/moves", responses=error_responses(401))
async def list_moves(service: ServiceDep, owner: OwnerDep, lang: LangDep,
                     limit: int = Query(100, ge=1, le=1000)) -> EvolutionMovesPublic:
    """The latest moves, newest first."""
    rows = await asyncio.to_thread(moves.history, service.engine, limit)
    return EvolutionMovesPublic(moves=[public(row, lang) for row in rows])


@router.post("/moves/{move_id}/undo", responses=error_responses(401, 404, 409))
async def undo_move(move_id: str, request: Request, service: ServiceDep, owner: OwnerDep,
                    lang: LangDep) -> EvolutionMoveResult:
    """Take move `move_id` back; refused while a later move depends on it."""
    actor = _actor(service, owner, request)
    back = await _run(lang, moves.undo, service.engine, move_id, actor)
    return EvolutionMoveResult(move=public(back, lang), message=i18n.get(
        "MSG_EVOLUTION_UNDONE", lang, move_id=move_id, undo_id=back.id))


@router.post("/executors/{name}/{move}", responses=error_responses(401, 404, 409))
async def owner_move(name: str, move: str, body: OwnerMoveCreate, request: Request,
                     service: ServiceDep, owner: OwnerDep, lang: LangDep) -> EvolutionMoveResult:
    """The owner quarantines, releases, archives or restores executor `name`."""
    actor = _actor(service, owner, request)
    row = await _run(lang, _owner_move, service, name, move, body.why.strip(), actor)
    return EvolutionMoveResult(move=public(row, lang), message=i18n.get(
        "MSG_EVOLUTION_DONE", lang, move_id=row.id, target=name,
        kind=i18n.get(f"MSG_EVOLUTION_KIND_{row.kind.upper()}", lang)))


def _owner_move(service: Runtime, name: str, move: str, why: str,
                actor: Actor) -> EvolutionMove:
    known = name in service.registry or name in moves.states(service.engine)
    if move not in STATE_MOVES or not known or not why:
        key = ("ERR_EVOLUTION_MOVE_UNKNOWN" if move not in STATE_MOVES else
               "ERR_EVOLUTION_EXECUTOR_UNKNOWN" if not known else "ERR_EVOLUTION_WHY_MISSING")
        exc = EvolutionError(key, name=name[:80], move=move[:40])
        moves.refuse(actor, move if move in STATE_MOVES else "move", name[:200], exc)
        raise exc
    return move_executor(service.engine, name, move, actor, why, reason="owner")


async def _run(lang: str, fn: Callable[..., EvolutionMove], *args: Any) -> EvolutionMove:
    try:
        result: EvolutionMove = await asyncio.to_thread(fn, *args)
    except EvolutionError as exc:
        raise HTTPException(_STATUS.get(exc.key, 409), detail={
            "key": exc.key, "message": i18n.get(exc.key, lang, **exc.vars)}) from exc
    return result


def _actor(service: Runtime, owner: str, request: Request) -> Actor:
    channel = "api" if request.headers.get("authorization") else "web"
    return Actor(service.audit, sender=owner, channel=channel)
