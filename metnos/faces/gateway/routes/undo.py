"""`POST /api/actions/{action_id}/undo`: undo an action, for the owner (SPEC §5); the id may
be a short handle (a unique prefix, as git takes). `GET /api/actions/undoable`: the recent
changes that can still be undone, with their handles, in plain words."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request

from metnos.faces.gateway.deps import LangDep, OwnerDep, TurnsDep
from metnos.faces.gateway.schemas import error_responses
from metnos.ground import i18n
from metnos.mechanisms.undo import UndoError
from metnos.turns import undo_list

router = APIRouter(prefix="/api/actions", tags=["undo"])

_STATUS = {"ERR_UNDO_NOT_FOUND": 404, "ERR_UNDO_ALREADY_DONE": 409,
           "ERR_UNDO_MANIFEST_INVALID": 422, "ERR_UNDO_NOTHING_RECORDED": 422,
           "ERR_UNDO_PURGED": 410, "ERR_UNDO_AMBIGUOUS": 409}


@router.get("/undoable", responses=error_responses(401))
async def undoable(turns: TurnsDep, owner: OwnerDep, lang: LangDep,
                   limit: int = Query(10, ge=1, le=100)) -> dict[str, Any]:
    """The newest changes still undoable, newest first: `handle`, `text`, `when`."""
    found = await asyncio.to_thread(undo_list.recent, turns.service, lang, limit)
    return {"actions": [undo_list.as_dict(c) for c in found],
            "message": "" if found else undo_list.nothing(lang)}


@router.post("/{action_id}/undo", responses=error_responses(401, 404, 409))
async def undo_action(action_id: str, request: Request, turns: TurnsDep, owner: OwnerDep,
                      lang: LangDep) -> dict[str, Any]:
    """The undo's report: `outcome` is `done`, or `failed` with the paths that were not.
    Audited on channel `web` for the browser's Undo button, `api` for a bearer client."""
    channel = "api" if request.headers.get("authorization") else "web"
    try:
        report = await turns.undo(action_id, sender=owner, channel=channel)
    except UndoError as exc:
        raise HTTPException(_STATUS.get(exc.key, 409), detail={
            "key": exc.key, "message": i18n.get(exc.key, lang, **exc.vars)}) from exc
    return report.to_dict(lang)
