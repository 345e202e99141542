"""`/api/audit`: the latest audit lines, for the owner."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from metnos.gateway.deps import OwnerDep, ServiceDep

router = APIRouter(prefix="/api/audit", tags=["audit"])


SCAN_LINES = 5000  # how far back a per-session view looks


@router.get("")
async def audit_tail(service: ServiceDep, owner: OwnerDep,
                     limit: int = Query(50, ge=1, le=1000),
                     session_id: str | None = Query(None, max_length=64)) -> list[dict[str, Any]]:
    """The latest lines; with `session_id`, the latest lines of that conversation (the web
    chat's activity log), looking back at most SCAN_LINES lines."""
    if session_id is None:
        return service.audit.tail(limit)
    lines = [ln for ln in service.audit.tail(SCAN_LINES) if ln.get("session_id") == session_id]
    return lines[-limit:]
