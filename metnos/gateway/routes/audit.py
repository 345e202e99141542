"""`/api/audit`: the latest audit lines, for the owner."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from metnos.gateway.deps import OwnerDep, ServiceDep

router = APIRouter(prefix="/api/audit", tags=["audit"])


@router.get("")
async def audit_tail(service: ServiceDep, owner: OwnerDep,
                     limit: int = Query(50, ge=1, le=1000)) -> list[dict[str, Any]]:
    return service.audit.tail(limit)
