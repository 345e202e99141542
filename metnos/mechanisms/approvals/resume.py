"""Deciding an approval and resuming its turn (SPEC §4): the one path of every surface that
decides (`POST /api/approvals/{id}`, the web chat's socket, Telegram's buttons).

A decision is recorded in the database first (single-use, bound to the user and, when the
caller names one, the conversation; refused after its expiry), then the paused turn is
resumed. Every decision and every refusal leaves exactly one audit line; a resume that fails
after its retries leaves one more and raises `ERR_APPROVAL_RESUME_FAILED` (502) with the
approval's state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.engine import Engine

from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.approvals.models import Approval
from metnos.mechanisms.approvals.service import ApprovalError, decide
from metnos.mechanisms.audit import AuditLog

log = logging.getLogger(__name__)
# resumes a paused turn flow with the decision: (flow_run_id, run input)
Resumer = Callable[[str, dict[str, Any]], Awaitable[None]]
RESUME_FAILED = "ERR_APPROVAL_RESUME_FAILED"


async def decide_and_resume(engine: Engine, audit: AuditLog, resumer: Resumer | None,
                            approval_id: str, decision: str, *, user_id: str,
                            session_id: str | None = None, reason: str = "",
                            channel: str = "api", via: str = "api") -> tuple[Approval, bool]:
    """Record `user_id`'s decision (one audit line, ApprovalError when refused), then resume
    the paused turn flow through `resumer` (None: the plain path polls the row); True when
    it was resumed.

    The resumer retries what may pass (flows/_resume.py); when the resume still fails, the
    decision stays recorded and the caller gets ApprovalError(ERR_APPROVAL_RESUME_FAILED,
    502) naming the approval's state, with one more audit line: never a silent success."""
    row = await asyncio.to_thread(_decide, engine, audit, approval_id, decision, user_id,
                                  session_id, reason, channel, via)
    if resumer is None or not row.flow_run_id:
        return row, False
    try:
        await resumer(row.flow_run_id, {"decision": decision, "reason": reason})
    except Exception as exc:  # the resumer's last error, whatever Prefect raised: told below
        log.error("approval.resume_failed id=%s flow_run_id=%s", row.id, row.flow_run_id,
                  exc_info=exc)
        await asyncio.to_thread(
            audit.append, sender=user_id, channel=channel, action="approval",
            approval_id=row.id, session_id=row.session_id, turn_id=row.turn_id,
            decision="error", reason=RESUME_FAILED, outcome=row.status)
        detail = f"{type(exc).__name__}: {exc}"[:200]
        raise ApprovalError(RESUME_FAILED, 502, approval_id=row.id, status=row.status,
                            detail=detail) from exc
    return row, True


def _decide(engine: Engine, audit: AuditLog, approval_id: str, decision: str, user_id: str,
            session_id: str | None, reason: str, channel: str, via: str) -> Approval:
    fields = {"sender": user_id, "channel": channel, "action": "approval",
              "approval_id": approval_id[:64], "session_id": session_id}
    with db_session(engine) as db:
        try:
            row = decide(db, approval_id, decision, user_id=user_id, session_id=session_id,
                         via=via, note=reason)
        except ApprovalError as exc:
            audit.append(**fields, decision="deny", reason=exc.key, outcome="refused")
            raise
    audit.append(**{**fields, "session_id": row.session_id}, turn_id=row.turn_id,
                 decision="info", reason="MSG_APPROVAL_DECIDED", outcome=row.status)
    return row
