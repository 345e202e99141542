"""Messages Metnos sends on its own (a reminder at its time), for the owner's clients.

- `GET /api/notices/events`: the web chat's stream (server-sent events). Each due web notice
  comes once as `event: notice` with `{"id", "text", "at", "session_id", ...}`; those that
  came while no page was open come when one connects. Keep-alive comments in between.
- `GET /api/notices?channel=cli`: the due notices of a channel not yet delivered (`metnos
  chat` shows them), then `POST /api/notices/delivered` with their ids marks them delivered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from metnos.gateway.connections import connections_of
from metnos.gateway.deps import OwnerDep, ServiceDep
from metnos.gateway.outbox_delivery import Delivery, notice
from metnos.gateway.schemas import error_responses
from metnos.reminders import outbox

router = APIRouter(prefix="/api/notices", tags=["notices"])
KEEP_ALIVE_S = 15.0


class NoticesDelivered(BaseModel):
    ids: list[str] = Field(max_length=200)


@router.get("", responses=error_responses(401))
async def list_notices(service: ServiceDep, owner: OwnerDep,
                       channel: Literal["web", "telegram", "cli"] = "cli") -> dict[str, Any]:
    """The due notices of `channel` not delivered yet, oldest first."""
    rows = await asyncio.to_thread(outbox.pending, service.engine, channel=channel,
                                   user_id=owner)
    return {"notices": [notice(row) for row in rows]}


@router.post("/delivered", responses=error_responses(401))
async def mark_delivered(body: NoticesDelivered, service: ServiceDep,
                         owner: OwnerDep) -> dict[str, Any]:
    """Mark the owner's notices delivered (the client has shown them)."""
    mine = {row.id for row in await asyncio.to_thread(
        outbox.pending, service.engine, user_id=owner, limit=500)}
    taken = await asyncio.to_thread(outbox.claim, service.engine,
                                    [i for i in body.ids if i in mine])
    return {"delivered": taken}


@router.get("/events", response_class=StreamingResponse, responses={
    **error_responses(401), 200: {"content": {"text/event-stream": {}}}})
async def notice_events(request: Request, service: ServiceDep,
                        owner: OwnerDep) -> StreamingResponse:
    """The web chat's notices as server-sent events, each delivered once."""
    delivery: Delivery = request.app.state.delivery
    auth = getattr(request.state, "auth", None)
    held = connections_of(request.app.state).hold(getattr(auth, "web_session_id", None))
    return StreamingResponse(_stream(service, delivery, owner, held),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _stream(service: Any, delivery: Delivery, owner: str,
                  held: AbstractContextManager[asyncio.Event]) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    with held as ended, delivery.listen() as wake:
        while not ended.is_set():
            if wake.is_set():
                wake.clear()
                async for frame in _due(service, owner):
                    yield frame
            waiting = asyncio.ensure_future(wake.wait())
            stop = asyncio.ensure_future(ended.wait())
            done, _ = await asyncio.wait({waiting, stop}, timeout=KEEP_ALIVE_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            stop.cancel()
            if not done:
                yield ": keep-alive\n\n"


async def _due(service: Any, owner: str) -> AsyncIterator[str]:
    """Claim the owner's due web notices and yield them; any the client did not take (the
    stream closed mid-way) go back to undelivered."""
    rows = await asyncio.to_thread(outbox.pending, service.engine, channel="web",
                                   user_id=owner)
    taken = set(await asyncio.to_thread(outbox.claim, service.engine, [r.id for r in rows]))
    left = [r.id for r in rows if r.id in taken]
    try:
        for row in rows:
            if row.id in taken:
                data = json.dumps(notice(row), ensure_ascii=False)
                yield f"event: notice\ndata: {data}\n\n"
                left.remove(row.id)
    finally:
        if left:
            await asyncio.to_thread(outbox.unclaim, service.engine, left)
