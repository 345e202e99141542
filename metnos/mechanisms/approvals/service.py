"""The approval state machine on the database (SPEC §4, issue 3).

pending ──decide──▶ approved ──consume──▶ used
   │                   └──(digest changed)─▶ refused
   ├──decide──▶ denied
   └──(expiry)─▶ expired          (a timeout is never recorded as "denied")

Every transition is a conditional UPDATE on the expected current status, so two callers
racing for the same approval cannot both win: an approval is single-use.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, or_, update
from sqlmodel import Session, col, select

from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.mechanisms.approvals.models import Approval
from metnos.mechanisms.policy.approver import OWNER_USER_ID

DECISIONS = ("approve", "deny")


class ApprovalError(MetnosError, PermissionError):
    """A decision or a use that is not allowed; `http_status` is what the API answers."""

    key = "ERR_APPROVAL_REFUSED"

    def __init__(self, key: str, http_status: int, /, **vars: Any) -> None:
        super().__init__(key, **vars)
        self.http_status = http_status


@dataclass(frozen=True)
class NewApproval:
    turn_id: str
    session_id: str
    user_id: str
    channel: str
    executor: str
    args: dict[str, Any]
    files: dict[str, str | None]
    digest: str
    action_id: str
    reason_key: str
    # who may decide (metnos.mechanisms.policy.approver); None: `user_id`
    approver: str | None = None
    sources: tuple[str, ...] = ()  # the untrusted sources in the turn's context


def approver_of(row: Approval) -> str:
    return row.approver or row.user_id


def may_decide(row: Approval, user_id: str) -> bool:
    """The approver decides; the owner may decide any (and so deny a member's) action."""
    return user_id in (approver_of(row), OWNER_USER_ID)


def create(db: Session, new: NewApproval, *, timeout_s: float,
           flow_run_id: str | None = None, now: datetime | None = None) -> Approval:
    now = now or utcnow()
    row = Approval(id=secrets.token_hex(6), turn_id=new.turn_id, session_id=new.session_id,
                   user_id=new.user_id, channel=new.channel, executor=new.executor,
                   args=new.args, files=new.files, digest=new.digest, action_id=new.action_id,
                   reason_key=new.reason_key, approver=new.approver or new.user_id,
                   sources=list(new.sources), flow_run_id=flow_run_id, created_at=now,
                   expires_at=now + timedelta(seconds=timeout_s))
    db.add(row)
    db.commit()
    return row


def get(db: Session, approval_id: str) -> Approval:
    row = db.get(Approval, approval_id[:64])
    if row is None:
        raise ApprovalError("ERR_APPROVAL_NOT_FOUND", 404, approval_id=approval_id[:64])
    db.refresh(row)
    return row


def decide(db: Session, approval_id: str, decision: str, *, user_id: str,
           session_id: str | None = None, via: str, note: str = "",
           now: datetime | None = None) -> Approval:
    """The approver's yes or no. Refused: another user (a member's step that waits for the
    owner, to the member), another conversation of the asker, not pending any more
    (replay), or past its expiry (then it is recorded as expired)."""
    if decision not in DECISIONS:
        raise ApprovalError("ERR_APPROVAL_DECISION_INVALID", 422, decision=decision[:20])
    now = now or utcnow()
    row = get(db, approval_id)
    if not may_decide(row, user_id):
        key = "ERR_APPROVAL_OWNER_DECIDES" if user_id == row.user_id else \
            "ERR_APPROVAL_WRONG_USER"
        raise ApprovalError(key, 403, approval_id=row.id)
    if session_id is not None and row.user_id == user_id and row.session_id != session_id:
        raise ApprovalError("ERR_APPROVAL_WRONG_SESSION", 403, approval_id=row.id)
    if row.status != "pending":
        raise ApprovalError("ERR_APPROVAL_NOT_PENDING", 409, approval_id=row.id,
                            status=row.status)
    if now >= row.expires_at:
        expire(db, row.id, now=now)
        raise ApprovalError("ERR_APPROVAL_EXPIRED", 410, approval_id=row.id,
                            executor=row.executor)
    status = "approved" if decision == "approve" else "denied"
    if not _move(db, row.id, "pending", status, decided_at=now, decided_by=user_id, via=via,
                 note=note[:500] or None):
        raise ApprovalError("ERR_APPROVAL_NOT_PENDING", 409, approval_id=row.id,
                            status=get(db, row.id).status)
    return get(db, row.id)


def consume(db: Session, approval_id: str, *, user_id: str, session_id: str,
            digest: str) -> Approval:
    """Use an approved approval for the action about to run: once, for this exact action."""
    row = get(db, approval_id)
    if row.user_id != user_id:
        raise ApprovalError("ERR_APPROVAL_WRONG_USER", 403, approval_id=row.id)
    if row.session_id != session_id:
        raise ApprovalError("ERR_APPROVAL_WRONG_SESSION", 403, approval_id=row.id)
    if row.status != "approved":
        raise ApprovalError("ERR_APPROVAL_NOT_APPROVED", 409, approval_id=row.id,
                            status=row.status)
    if row.digest != digest:
        _move(db, row.id, "approved", "refused", note="ERR_APPROVAL_ACTION_CHANGED")
        raise ApprovalError("ERR_APPROVAL_ACTION_CHANGED", 409, approval_id=row.id,
                            executor=row.executor)
    if not _move(db, row.id, "approved", "used"):
        raise ApprovalError("ERR_APPROVAL_NOT_APPROVED", 409, approval_id=row.id,
                            status=get(db, row.id).status)
    return get(db, row.id)


def expire(db: Session, approval_id: str, *, now: datetime | None = None) -> bool:
    """Pending → expired (the wait ran out). False when it was decided meanwhile."""
    return _move(db, approval_id, "pending", "expired", decided_at=now or utcnow(),
                 via="timeout")


def expire_interrupted(db: Session) -> list[str]:
    """At start-up: approvals left pending by a stopped gateway can never resume their turn."""
    rows = db.exec(select(Approval).where(col(Approval.status) == "pending")).all()
    done = [row.id for row in rows
            if _move(db, row.id, "pending", "expired", decided_at=utcnow(), via="restart",
                     note="ERR_APPROVAL_INTERRUPTED")]
    return done


def list_approvals(db: Session, *, status: str | None = "pending",
                   user_id: str | None = None, limit: int = 100) -> list[Approval]:
    query = select(Approval).order_by(col(Approval.created_at).desc()).limit(limit)
    if status:
        query = query.where(col(Approval.status) == status)
    if user_id and user_id != OWNER_USER_ID:  # the owner sees everyone's
        query = query.where(or_(col(Approval.user_id) == user_id,
                                col(Approval.approver) == user_id))
    return list(db.exec(query).all())


def approvals_of_turn(db: Session, turn_id: str) -> list[Approval]:
    query = select(Approval).where(col(Approval.turn_id) == turn_id).order_by(
        col(Approval.created_at))
    return list(db.exec(query).all())


def public(row: Approval) -> dict[str, Any]:
    """What a channel shows: the exact action, its binding and its state."""
    return {"approval_id": row.id, "turn_id": row.turn_id, "session_id": row.session_id,
            "executor": row.executor, "args": row.args, "files": row.files,
            "status": row.status, "reason_key": row.reason_key,
            "created_at": row.created_at.isoformat(), "expires_at": row.expires_at.isoformat(),
            "decided_at": row.decided_at.isoformat() if row.decided_at else None,
            "via": row.via, "action_id": row.action_id, "asker": row.user_id,
            "approver": approver_of(row), "sources": list(row.sources or [])}


def _move(db: Session, approval_id: str, old: str, new: str, **values: Any) -> bool:
    stmt = (update(Approval).where(col(Approval.id) == approval_id)
            .where(col(Approval.status) == old).values(status=new, **values))
    result = cast(CursorResult[Any], db.execute(stmt))
    db.commit()
    return result.rowcount == 1
