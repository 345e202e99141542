"""`/api/approvals`: list what waits for the owner, approve or deny it (SPEC §3, §4).

A decision is recorded in the database first (single-use, bound to the user and, when the
caller names one, the conversation; refused after its expiry), then the paused turn is
resumed. Every decision and every refusal leaves exactly one audit line; a resume that fails
after its retries leaves one more and answers 502 with the approval's state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from metnos import approvals
from metnos.approvals import ApprovalError
from metnos.channels.approval_card import plain_card
from metnos.db.engine import session as db_session
from metnos.gateway.deps import LangDep, OwnerDep, ServiceDep, gateway_state
from metnos.gateway.schemas import ErrorPublic
from metnos.turns.service import TurnService

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/approvals", tags=["approvals"])
# resumes a paused turn flow: (flow_run_id, run input); `metnos.gateway.app.Resumer`
Resumer = Callable[[str, dict[str, Any]], Awaitable[None]]
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorPublic} for code in (401, 403, 404, 409, 410, 422, 502)}
RESUME_FAILED = "ERR_APPROVAL_RESUME_FAILED"


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
async def list_approvals(service: ServiceDep, owner: OwnerDep, lang: LangDep,
                         status: str = Query("pending", max_length=20),
                         limit: int = Query(50, ge=1, le=500)) -> ApprovalList:
    """The owner's approvals (pending by default), each with its `card` in plain words in
    the request's language: `action` (what happens to which file), `why` (why Metnos asks)
    and `details` (the raw arguments)."""
    def read() -> list[dict[str, Any]]:
        with db_session(service.engine) as db:
            rows = approvals.list_approvals(db, status=None if status == "all" else status,
                                            user_id=owner, limit=limit)
            shown = [approvals.public(r) for r in rows]
        return [{**a, "card": plain_card(a, lang).to_dict()} for a in shown]
    return ApprovalList(approvals=await asyncio.to_thread(read))


@router.post("/{approval_id}", response_model=ApprovalDecided, responses=_ERRORS)
async def decide(approval_id: str, body: DecisionBody, request: Request, service: ServiceDep,
                 owner: OwnerDep, lang: LangDep) -> ApprovalDecided:
    try:
        row, resumed = await decide_and_resume(
            service, gateway_state(request).resumer, approval_id, body.decision,
            user_id=owner, session_id=body.session_id, reason=body.reason or "")
    except ApprovalError as exc:
        raise HTTPException(exc.http_status, detail={"key": exc.key,
                                                "message": exc.message(lang)}) from exc
    return ApprovalDecided(approval=approvals.public(row), resumed=resumed)


async def decide_and_resume(service: TurnService, resumer: Resumer | None, approval_id: str,
                            decision: str, *, user_id: str, session_id: str | None = None,
                            reason: str = "", channel: str = "api",
                            via: str = "api") -> tuple[approvals.Approval, bool]:
    """Record `user_id`'s decision (one audit line, ApprovalError when refused), then resume
    the paused turn flow through `resumer` (None: the plain path polls the row). Every
    surface that decides an approval (the API, Telegram's buttons) goes through here.

    The resumer retries what may pass (flows/approval.py); when the resume still fails, the
    decision stays recorded and the caller gets ApprovalError(ERR_APPROVAL_RESUME_FAILED,
    502) naming the approval's state, with one more audit line: never a silent success."""
    row = await asyncio.to_thread(_decide, service, approval_id, decision, user_id,
                                  session_id, reason, channel, via)
    if resumer is None or not row.flow_run_id:
        return row, False
    try:
        await resumer(row.flow_run_id, {"decision": decision, "reason": reason})
    except Exception as exc:  # the resumer's last error, whatever Prefect raised: told below
        log.error("approval.resume_failed id=%s flow_run_id=%s", row.id, row.flow_run_id,
                  exc_info=exc)
        await asyncio.to_thread(
            service.audit.append, sender=user_id, channel=channel, action="approval",
            approval_id=row.id, session_id=row.session_id, turn_id=row.turn_id,
            decision="error", reason=RESUME_FAILED, outcome=row.status)
        detail = f"{type(exc).__name__}: {exc}"[:200]
        raise ApprovalError(RESUME_FAILED, 502, approval_id=row.id, status=row.status,
                            detail=detail) from exc
    return row, True


def _decide(service: TurnService, approval_id: str, decision: str, user_id: str,
            session_id: str | None, reason: str, channel: str,
            via: str) -> approvals.Approval:
    fields = {"sender": user_id, "channel": channel, "action": "approval",
              "approval_id": approval_id[:64], "session_id": session_id}
    with db_session(service.engine) as db:
        try:
            row = approvals.decide(db, approval_id, decision, user_id=user_id,
                                   session_id=session_id, via=via, note=reason)
        except ApprovalError as exc:
            service.audit.append(**fields, decision="deny", reason=exc.key, outcome="refused")
            raise
    service.audit.append(**{**fields, "session_id": row.session_id}, turn_id=row.turn_id,
                         decision="info", reason="MSG_APPROVAL_DECIDED", outcome=row.status)
    return row
