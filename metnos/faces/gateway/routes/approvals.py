"""`/api/approvals`: list what waits for the owner, approve or deny it (SPEC §3, §4).

A decision goes through the turn handle (`metnos.mechanisms.approvals.resume`): recorded first, then
the paused turn resumed, one audit line for every decision and every refusal; a resume that fails
after its retries answers 502 with the approval's state.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from metnos.faces.gateway.deps import LangDep, PersonDep, ServiceDep, TurnsDep
from metnos.faces.gateway.schemas import ErrorPublic
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals import ApprovalError
from metnos.mechanisms.approvals.card import plain_card

router = APIRouter(prefix="/api/approvals", tags=["approvals"])
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 403, 404, 409, 410, 422, 502)}


class DecisionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    reason: str | None = Field(None, max_length=500)
    session_id: str | None = Field(None, max_length=64,
                                   description="The conversation the decision comes from.")


class ApprovalList(BaseModel):
    approvals: list[dict[str, Any]]


class ApprovalDecided(BaseModel):
    approval: dict[str, Any]
    resumed: bool


@router.get("", response_model=ApprovalList, responses=_ERRORS)
async def list_approvals(service: ServiceDep, person: PersonDep, lang: LangDep,
                         status: str = Query("pending", max_length=20),
                         limit: int = Query(50, ge=1, le=500)) -> ApprovalList:
    """The owner's approvals (pending by default), each with its `card` in plain words in
    the request's language: `action` (what happens to which file), `why` (why Metnos asks)
    and `details` (the raw arguments)."""
    def read() -> list[dict[str, Any]]:
        with db_session(service.engine) as db:
            rows = approvals.list_approvals(db, status=None if status == "all" else status,
                                            user_id=person, limit=limit)
            shown = [approvals.public(r) for r in rows]
        return [{**a, "card": plain_card(a, lang).to_dict()} for a in shown]
    return ApprovalList(approvals=await asyncio.to_thread(read))


@router.post("/{approval_id}", response_model=ApprovalDecided, responses=_ERRORS)
async def decide(approval_id: str, body: DecisionBody, turns: TurnsDep, person: PersonDep,
                 lang: LangDep) -> ApprovalDecided:
    try:
        row, resumed = await turns.decide(approval_id, body.decision, user_id=person,
                                          session_id=body.session_id, reason=body.reason or "",
                                          channel="api", via="api")
    except ApprovalError as exc:
        raise HTTPException(exc.http_status, detail={"key": exc.key,
                                                "message": i18n.message(exc, lang)}) from exc
    return ApprovalDecided(approval=approvals.public(row), resumed=resumed)
