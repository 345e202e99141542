"""The trash, for the owner (SPEC §5): `GET /api/trash` (what is kept, how much),
`POST /api/trash/purge` (clear it all, what is older than some days, or one change by its
handle). Each clearing leaves an audit line; a cleared change can no longer be undone."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from metnos.faces.gateway.deps import LangDep, OwnerDep, ServiceDep
from metnos.faces.gateway.schemas import error_responses
from metnos.ground import i18n
from metnos.turns import trash, undo_run
from metnos.turns.actions import HANDLE_CHARS

router = APIRouter(prefix="/api/trash", tags=["undo"])


class PurgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    older_than_days: float | None = Field(
        None, ge=0, le=36500, description="Only what is older than this many days.")
    handle: str | None = Field(None, max_length=64,
                               description="Only this change (its handle or whole id).")


@router.get("", responses=error_responses(401))
async def kept(service: ServiceDep, owner: OwnerDep, lang: LangDep) -> dict[str, Any]:
    """What the trash keeps, oldest first, with the limits of the retention policy."""
    items = [k for k in await asyncio.to_thread(trash.kept, service.settings)
             if k.purged_at is None]
    limits = service.settings.trash
    return {"items": [{**trash.describe(k), "handle": k.action_id[:HANDLE_CHARS]}
                      for k in items],
            "total_bytes": sum(k.size for k in items),
            "max_age_days": limits.max_age_days, "max_bytes": limits.max_bytes,
            "message": i18n.get("MSG_TRASH_TOTAL", lang, count=len(items),
                                size=trash.size_words(sum(k.size for k in items), lang),
                                days=f"{limits.max_age_days:g}",
                                limit=trash.size_words(limits.max_bytes, lang))}


@router.post("/purge", responses=error_responses(401, 404, 409))
async def purge(body: PurgeRequest, request: Request, service: ServiceDep, owner: OwnerDep,
                lang: LangDep) -> dict[str, Any]:
    """Clear the trash (or part of it); the changes cleared can no longer be undone."""
    channel = "api" if request.headers.get("authorization") else "web"
    settings = service.settings
    if body.handle:
        try:
            action_id = await asyncio.to_thread(undo_run.resolve, service, body.handle)
        except undo_run.Ambiguous:
            raise HTTPException(409, detail={"key": "ERR_UNDO_AMBIGUOUS", "message": i18n.get(
                "ERR_UNDO_AMBIGUOUS", lang, handle=body.handle)}) from None
        freed = None if action_id is None else await asyncio.to_thread(
            trash.purge, settings, action_id, audit=service.audit, sender=owner,
            channel=channel, reason="owner")
        if freed is None:
            raise HTTPException(404, detail={"key": "ERR_TRASH_NOT_KEPT", "message": i18n.get(
                "ERR_TRASH_NOT_KEPT", lang, handle=body.handle)})
        done = [(str(action_id), freed)]
    else:
        older = None if body.older_than_days is None else timedelta(days=body.older_than_days)
        done = await asyncio.to_thread(trash.purge_all, settings, audit=service.audit,
                                       sender=owner, channel=channel, reason="owner",
                                       older_than=older)
    freed_bytes = sum(n for _, n in done)
    return {"cleared": len(done), "bytes": freed_bytes,
            "message": trash.purged_words(len(done), freed_bytes, lang)}
