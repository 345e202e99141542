"""`/api/audit`: the latest audit lines, for the owner."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from fastapi import APIRouter, Query, Request, Response

from metnos.faces.gateway.deps import OwnerDep, ServiceDep
from metnos.faces.gateway.routes.web import page_locale
from metnos.faces.gateway.schemas import error_responses
from metnos.faces.web.activity import plain_lines
from metnos.turns.runtime import Runtime

router = APIRouter(prefix="/api/audit", tags=["audit"])


SCAN_LINES = 5000  # how far back a per-session view looks
# one read at a time: it holds the GIL while it parses, and many at once would leave the
# event loop (every turn's stream) a sliver of it; one after the other they take as long
_READING = threading.BoundedSemaphore(1)


@router.get("", responses=error_responses(401), response_model=list[dict[str, Any]])
async def audit_tail(request: Request, service: ServiceDep, owner: OwnerDep,
                     limit: int = Query(50, ge=1, le=SCAN_LINES),
                     session_id: str | None = Query(None, max_length=64)) -> Response:
    """The latest lines; with `session_id`, the latest lines of that conversation (the web
    chat's activity log), looking back at most SCAN_LINES lines. Read, parsed and encoded
    in a worker thread: a large log never stalls the event loop (other turns' streams).
    Each line carries `text`, what happened in plain words in the page's language (what the
    activity log shows); its raw fields are the details a click away."""
    lang = page_locale(request, service.settings)
    body = await asyncio.to_thread(_tail_json, service, limit, session_id, lang)
    return Response(body, media_type="application/json")


def _tail_json(service: Runtime, limit: int, session_id: str | None, lang: str) -> bytes:
    with _READING:
        return _read_tail(service, limit, session_id, lang)


def _read_tail(service: Runtime, limit: int, session_id: str | None, lang: str) -> bytes:
    if session_id is None:
        lines = service.audit.tail(limit)
    else:
        lines = [ln for ln in service.audit.tail(SCAN_LINES)
                 if ln.get("session_id") == session_id][-limit:]
    lines = plain_lines(service.engine, lines, set(service.registry.names()), lang)
    return json.dumps(lines, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
