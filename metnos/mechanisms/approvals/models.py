"""The `approval` table: one row per action that waits (or waited) for the owner's decision."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Column
from sqlmodel import Field, SQLModel

from metnos.ground.db.models import _stamp, utcnow

APPROVAL_STATUSES = ("pending", "approved", "denied", "expired", "used", "refused")


class Approval(SQLModel, table=True):
    """An action waiting for a yes, bound to its user, conversation, exact digest and expiry;
    `approver` is who may say it (the owner, for a member's step on the household's things)."""

    __tablename__ = "approval"
    __table_args__ = (
        CheckConstraint(f"status IN {APPROVAL_STATUSES!r}", name="approval_status_valid"),
    )

    id: str = Field(primary_key=True)
    turn_id: str = Field(foreign_key="turn.id", index=True)
    session_id: str = Field(index=True)
    user_id: str = Field(index=True)  # who asked: their turn waits and consumes it
    # who may decide (metnos.mechanisms.policy.approver); None on rows older than the column:
    # `user_id`
    approver: str | None = Field(default=None, index=True)
    channel: str
    executor: str
    args: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    files: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    digest: str
    action_id: str
    reason_key: str  # why the policy asks (ASK_POLICY_MEDIUM_RISK, ASK_LAW_UNTRUSTED_DATA...)
    # the untrusted sources in the turn's context when it asked (every card names them)
    sources: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    status: str = Field(default="pending", index=True)
    flow_run_id: str | None = None
    created_at: datetime = _stamp(default_factory=utcnow)
    expires_at: datetime = _stamp()
    decided_at: datetime | None = _stamp(default=None, nullable=True)
    decided_by: str | None = None
    via: str | None = None  # api | cli | prefect-ui | chat | telegram
    note: str | None = None  # the decider's free-text reason, or why it was refused
