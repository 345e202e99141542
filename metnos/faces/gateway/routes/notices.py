"""Messages Metnos sends on its own (a reminder at its time), for each person's clients (the
owner's, and a family member's on their device: each gets only their own).

- `GET /api/notices/events`: the web chat's stream (server-sent events). Each due web notice
  not yet delivered comes as `event: notice` with `{"id", "text", "at", "session_id", ...}`,
  once per stream; the page that shows it says so with `POST /api/notices/delivered`, and
  from then on no stream sends it again. Keep-alive comments in between.
- `GET /api/notices?channel=cli`: the due notices of a channel not yet delivered (`metnos
  chat` shows them), then `POST /api/notices/delivered` with their ids marks them delivered.

A GET changes nothing (issue 25): a page of another origin that makes the owner's browser
open the stream (an `<img>`, a `fetch` in no-cors mode: the cookie goes along to another port
of 127.0.0.1) learns nothing and takes nothing, since only the POST, which checks the `Origin`,
marks a notice delivered. The stream itself is refused to a browser request from another
origin, as the chat's WebSocket handshake is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from metnos.faces.gateway.deps import (
    PersonDep,
    ServiceDep,
    gateway_state,
    request_lang,
    same_origin_browser,
)
from metnos.faces.gateway.outbox_delivery import Delivery, notice
from metnos.faces.gateway.schemas import error_responses
from metnos.features.reminders import outbox
from metnos.ground import i18n
from metnos.ground.db.engine import in_session

router = APIRouter(prefix="/api/notices", tags=["notices"])
KEEP_ALIVE_S = 15.0


class NoticesDelivered(BaseModel):
    ids: list[str] = Field(max_length=200)


@router.get("", responses=error_responses(401))
async def list_notices(service: ServiceDep, person: PersonDep,
                       channel: Literal["web", "telegram", "cli"] = "cli") -> dict[str, Any]:
    """The due notices of `channel` not delivered yet, oldest first."""
    rows = await asyncio.to_thread(in_session, service.engine, outbox.pending, channel=channel,
                                   user_id=person)
    return {"notices": [notice(row) for row in rows]}


@router.post("/delivered", responses=error_responses(401))
async def mark_delivered(body: NoticesDelivered, service: ServiceDep,
                         person: PersonDep) -> dict[str, Any]:
    """Mark the caller's notices delivered (the client has shown them)."""
    mine = {row.id for row in await asyncio.to_thread(
        in_session, service.engine, outbox.pending, user_id=person, limit=500)}
    taken = await asyncio.to_thread(in_session, service.engine, outbox.claim,
                                    [i for i in body.ids if i in mine])
    return {"delivered": taken}


@router.get("/events", response_class=StreamingResponse, responses={
    **error_responses(401), 200: {"content": {"text/event-stream": {}}}})
async def notice_events(request: Request, service: ServiceDep,
                        person: PersonDep) -> StreamingResponse:
    """The web chat's due notices as server-sent events (delivered once acknowledged)."""
    if not same_origin_browser(request):
        await asyncio.to_thread(service.audit.append, sender=person, channel="web",
                                action="notices", decision="deny",
                                reason="ERR_ORIGIN_FORBIDDEN", outcome="refused")
        raise HTTPException(403, detail={"key": "ERR_ORIGIN_FORBIDDEN", "message": i18n.get(
            "ERR_ORIGIN_FORBIDDEN", request_lang(request),
            origin=request.headers.get("origin", "")[:100] or "-")})
    delivery = gateway_state(request).delivery
    assert delivery is not None  # this router comes with the delivery loop (with_reminders)
    auth = getattr(request.state, "auth", None)
    held = gateway_state(request).connections.hold(getattr(auth, "connection", None))
    return StreamingResponse(_stream(service, delivery, person, held),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _stream(service: Any, delivery: Delivery, person: str,
                  held: AbstractContextManager[asyncio.Event]) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    sent: set[str] = set()
    with held as ended, delivery.listen() as wake:
        while not ended.is_set():
            if wake.is_set():
                wake.clear()
                async for frame in _due(service, person, sent):
                    yield frame
            waiting = asyncio.ensure_future(wake.wait())
            stop = asyncio.ensure_future(ended.wait())
            done, _ = await asyncio.wait({waiting, stop}, timeout=KEEP_ALIVE_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            stop.cancel()
            if not done:
                yield ": keep-alive\n\n"


async def _due(service: Any, person: str, sent: set[str]) -> AsyncIterator[str]:
    """The person's due web notices this stream has not sent yet (nothing is marked: the page
    acknowledges what it showed)."""
    rows = await asyncio.to_thread(in_session, service.engine, outbox.pending, channel="web",
                                   user_id=person)
    for row in rows:
        if row.id not in sent:
            sent.add(row.id)
            data = json.dumps(notice(row), ensure_ascii=False)
            yield f"event: notice\ndata: {data}\n\n"
